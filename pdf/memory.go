package pdf

import (
	"sync"

	"github.com/tetratelabs/wazero/experimental"
)

// Instances' linear memories. wazero's default grows a Go slice by
// appending: every growth copies the memory and leaves the old buffer to
// the garbage collector, so an instance filling a 1.5 GiB cap peaks at
// several times that in the process. Where the platform allows (memory_linux.go)
// each memory is instead one anonymous mapping of the cap, reserved but not
// committed: growing is reslicing, the process holds only the pages PDFium
// touched, and discarding an instance returns them to the OS at once.
//
// A memory can be freed before the code using it is done: an interrupted
// call frees its module's resources itself, in its own goroutine, and
// the rest of the guarded function may still hold a view of the memory
// (go-pdfium's bitmap buffer is one). Its pages are then released right
// away (reads see zeros, nothing faults), but the mapping is only
// unmapped once every guarded call that was running at that moment has
// returned, so no code ever touches an unmapped address. (No memory is
// freed from another goroutine while its call runs: guard in pdf.go.)

// sliceMemory is the portable fallback: a Go slice grown by appending.
type sliceMemory struct{ buf []byte }

func (m *sliceMemory) Reallocate(size uint64) []byte {
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size]
	} else {
		m.buf = append(m.buf[:cap(m.buf)], make([]byte, size-uint64(cap(m.buf)))...)
	}
	return m.buf
}

func (m *sliceMemory) Free() { m.buf = nil }

var _ experimental.LinearMemory = (*sliceMemory)(nil)

// calls tracks the guarded calls in flight, so that a freed mapping is
// unmapped only after the calls that might still use it have returned.
var calls = &inflight{active: map[uint64]struct{}{}}

type inflight struct {
	mu      sync.Mutex
	next    uint64
	active  map[uint64]struct{}
	pending []*retired
}

type retired struct {
	waits   map[uint64]struct{}
	release func()
}

// begin registers a call and returns its id for end.
func (t *inflight) begin() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next++
	t.active[t.next] = struct{}{}
	return t.next
}

// end unregisters a call and runs the releases no longer waiting on any.
func (t *inflight) end(id uint64) {
	var ready []func()
	t.mu.Lock()
	delete(t.active, id)
	kept := t.pending[:0]
	for _, r := range t.pending {
		delete(r.waits, id)
		if len(r.waits) == 0 {
			ready = append(ready, r.release)
		} else {
			kept = append(kept, r)
		}
	}
	clear(t.pending[len(kept):])
	t.pending = kept
	t.mu.Unlock()
	for _, f := range ready {
		f()
	}
}

// retire runs release once every call active now has ended.
func (t *inflight) retire(release func()) {
	t.mu.Lock()
	if len(t.active) == 0 {
		t.mu.Unlock()
		release()
		return
	}
	waits := make(map[uint64]struct{}, len(t.active))
	for id := range t.active {
		waits[id] = struct{}{}
	}
	t.pending = append(t.pending, &retired{waits: waits, release: release})
	t.mu.Unlock()
}
