package storage

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-io/strata/storage/internal/base"
)

// storageFailure marks an error of the log dir's file I/O as
// KAFKA_STORAGE_ERROR, keeping its cause, unless it already carries a Kafka
// error: what Kafka answers for a KafkaStorageException.
func storageFailure(err error) error {
	var ke *kerr.Error
	if err == nil || errors.As(err, &ke) {
		return err
	}
	return fmt.Errorf("%w: %w", err, kerr.KafkaStorageError)
}

// ErrCorruption is wrapped by every error reporting data on disk that is
// not what was written: a checksum mismatch, a malformed batch header, index,
// checkpoint, snapshot or metadata file (errors.Is(err, ErrCorruption)).
var ErrCorruption = base.ErrCorruption

// corruptionf is fmt.Errorf marking the error as ErrCorruption.
func corruptionf(format string, args ...any) error { return base.CorruptionErrorf(format, args...) }
