package envtest

import "sync"

// Warnings is a rest.WarningHandler that keeps the API server's warnings
// (admission warnings included) of the requests made with a config, for
// tests to look at. It is safe for concurrent use.
type Warnings struct {
	mu   sync.Mutex
	msgs []string
}

// HandleWarningHeader implements rest.WarningHandler.
func (w *Warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, text)
}

// Seen returns the warnings kept so far.
func (w *Warnings) Seen() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}

// Take returns the warnings kept so far and forgets them.
func (w *Warnings) Take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}
