// Package hub downloads model files from the Hugging Face Hub (or a mirror)
// into the cache that the Python huggingface_hub library uses, so files
// pulled by either are shared.
//
// # Protocol
//
// A file is resolved with HEAD {endpoint}/{repo}/resolve/{revision}/{file}
// without following redirects to another host (a redirect on the same host,
// as for a renamed repository, is followed). The answer carries the commit
// the revision points to (X-Repo-Commit), the file's hash (X-Linked-Etag for
// files stored with Git LFS: their SHA-256; otherwise ETag: the Git blob
// SHA-1), its size (X-Linked-Size, else Content-Length) and, for LFS files,
// the storage URL in Location. The bytes are then fetched with GET, resuming
// a partial download with a Range request. Errors carry X-Error-Code
// (RepoNotFound, GatedRepo, RevisionNotFound, EntryNotFound) and
// X-Error-Message. A whole repository is listed with
// GET {endpoint}/api/models/{repo}/revision/{revision}?blobs=true, whose
// "sha" is the commit and whose "siblings" give each file's name, size and
// hashes.
//
// Every file is checked against its hash before it enters the cache: the
// SHA-256 for LFS files, the Git blob SHA-1 (of "blob <size>\x00" and the
// content) otherwise. A file that does not match is deleted and reported.
//
// # Cache layout
//
//	$HF_HUB_CACHE (default $HF_HOME/hub, HF_HOME default ~/.cache/huggingface)
//	  models--{org}--{name}/
//	    blobs/{hash}                  file contents, named by their hash
//	    blobs/{hash}.incomplete       a download in progress, resumed from its size
//	    snapshots/{commit}/{file}     relative symlink to ../../blobs/{hash}
//	    refs/{revision}               the commit a branch or tag last pointed to
//	  .locks/models--{org}--{name}/{hash}.lock
//
// The lock files are the ones huggingface_hub takes (flock), so a Python
// process and vembed downloading the same file wait for each other.
//
// # Environment
//
// HF_ENDPOINT (default https://huggingface.co) selects a mirror; HF_TOKEN
// (else the token file $HF_HOME/token that "huggingface-cli login" writes)
// is sent as a bearer token to the endpoint's host only; HF_HUB_OFFLINE=1
// answers from the cache alone. When the hub cannot be reached, a revision
// already in the cache is used with a warning.
package hub
