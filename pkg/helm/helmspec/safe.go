package helmspec

import (
	"errors"
	"fmt"
)

// ErrHelmPanic marks a panic raised inside a Helm call; the panic value is
// in the message. The operation failed; the process is unharmed.
var ErrHelmPanic = errors.New("helm panicked")

// Safely runs fn and converts a panic inside it into an error wrapping
// ErrHelmPanic, so one hostile chart cannot crash the controller.
func Safely(op string, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: %w: %v", op, ErrHelmPanic, r)
		}
	}()
	return fn()
}
