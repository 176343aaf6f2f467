// Package base holds what storage and its sub-packages share without
// depending on each other: the corruption error kind.
package base

import (
	"errors"
	"fmt"
)

// ErrCorruption is wrapped by every error reporting data on disk that is
// not what was written: a checksum mismatch, a malformed batch header,
// index, checkpoint or metadata file. Test with errors.Is; storage
// re-exports it as storage.ErrCorruption.
var ErrCorruption = errors.New("corrupt data")

// corruptionError keeps its cause's message and unwraps to both the cause
// and ErrCorruption.
type corruptionError struct{ err error }

func (e *corruptionError) Error() string   { return e.err.Error() }
func (e *corruptionError) Unwrap() []error { return []error{e.err, ErrCorruption} }

// CorruptionErrorf formats as fmt.Errorf (%w included) and marks the
// result as ErrCorruption.
func CorruptionErrorf(format string, args ...any) error {
	return &corruptionError{fmt.Errorf(format, args...)}
}

// MarkCorruption marks err as ErrCorruption; nil stays nil.
func MarkCorruption(err error) error {
	if err == nil {
		return nil
	}
	return &corruptionError{err}
}
