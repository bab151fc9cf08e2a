// Package browsertest runs a headless Chromium for tests, driven through
// the DevTools protocol (chromedp), and keeps what a test wants to look at
// afterwards (screenshots) in an artifacts folder.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Browser is one headless Chromium with a fresh profile and one tab.
type Browser struct {
	// Ctx runs actions in the tab (chromedp.Run, chromedp.Do).
	Ctx context.Context

	mu   sync.Mutex
	msgs []chromedp.ConsoleMessage
}

// binaries are the names Chromium goes by, Debian's first.
var binaries = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// Start runs a headless Chromium until the test ends; the test is skipped
// when none is on PATH.
func Start(t testing.TB) *Browser {
	t.Helper()
	bin := ""
	for _, name := range binaries {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		t.Skip("no chromium on PATH (Debian: apt-get install chromium)")
	}
	// The flags keep the browser from reaching out on its own (updates,
	// sync, QUIC probes), which also keeps it quiet where the network is
	// closed; --no-sandbox because CI runs as root in a container.
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	b := &Browser{Ctx: ctx}
	console := chromedp.Console(ctx)
	go func() {
		for m, err := range console {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.msgs = append(b.msgs, m)
			b.mu.Unlock()
		}
	}()
	// Start the browser now, so that a broken installation fails here
	// with its own error rather than in the test's first step.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	// A step that waits for what never comes (a click on an element that
	// never shows) fails the test after Limit instead of hanging it.
	limited, cancelLimit := context.WithTimeout(ctx, Limit)
	t.Cleanup(cancelLimit)
	b.Ctx = limited
	return b
}

// Limit bounds the time of everything a test does in one Browser.
const Limit = 6 * time.Minute

// Errors returns the page's uncaught exceptions and the errors it logged,
// Content-Security-Policy refusals included, but not failed requests
// (the network log), which a test may provoke on purpose.
func (b *Browser) Errors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, m := range b.msgs {
		if m.IsException() || (m.Type == chromedp.ConsoleError && m.Source != "network") {
			out = append(out, m.String())
		}
	}
	return out
}

// Messages returns everything the page logged so far, one line each.
func (b *Browser) Messages() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, len(b.msgs))
	for i, m := range b.msgs {
		out[i] = m.String()
	}
	return out
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Artifacts returns a folder for the files a test keeps for people to look
// at: $VEMBED_TEST_ARTIFACTS/<test name> when that variable is set (kept
// after the run), otherwise a temporary folder removed with the test. Its
// path is logged.
func Artifacts(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if root := os.Getenv("VEMBED_TEST_ARTIFACTS"); root != "" {
		dir = filepath.Join(root, unsafeName.ReplaceAllString(strings.ReplaceAll(t.Name(), "/", "."), "_"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatalf("artifacts: %v", err)
		}
	}
	t.Logf("artifacts in %s", dir)
	return dir
}
