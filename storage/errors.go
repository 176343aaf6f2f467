package storage

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
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
