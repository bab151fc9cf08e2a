module github.com/vembed/vembed

go 1.26.0

require (
	github.com/schollz/progressbar/v3 v3.19.1
	go.etcd.io/bbolt v1.4.3
	golang.org/x/image v0.47.0
	golang.org/x/sync v0.24.0
	golang.org/x/sys v0.49.0
	golang.org/x/term v0.44.0
	golang.org/x/text v0.43.0
)

require (
	github.com/mitchellh/colorstring v0.0.0-20190213212951-d06e56a500db // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
)
