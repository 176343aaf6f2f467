// Package kafkaerr is the one way Strata builds a Kafka error code with the
// message a response carries for it, and reads that message back from an
// error: Kafka's ApiError(code, message), whose message is the message
// alone. franz-go's kerr.Error prints its code's name and description
// ("INVALID_REQUEST: This most likely occurs ..."), which Kafka never puts
// in a message, so a response's message is never an error's Error() text.
package kafkaerr

import (
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Error is a Kafka error code with Kafka's message, word for word. Its
// Error() is the message; errors.Is and errors.As find the code.
type Error struct {
	Code    *kerr.Error
	Message string
}

// New is the error of code with the message format makes of args.
func New(code *kerr.Error, format string, args ...any) error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.Code }

// Message is the message a response carries for err. An Error anywhere in
// err's chain gives its own message, whatever context wraps it (that
// context is for the logs). Otherwise the text of a Kafka code err wraps is
// left out: err's own words remain, or the code's description when err is
// the bare code (what a Kafka exception thrown without a message says).
// An error with no Kafka code is its text.
func Message(err error) string {
	var ke *Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	var code *kerr.Error
	if !errors.As(err, &code) {
		return err.Error()
	}
	s, suffix := err.Error(), code.Error()
	if s == suffix {
		return code.Description
	}
	s = strings.ReplaceAll(s, ": "+suffix, "")
	return strings.TrimPrefix(s, suffix+": ")
}
