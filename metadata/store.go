package metadata

// Store holds the current image of the cluster's metadata. A change is
// proposed as records; once the store has made it durable (the single
// node's files, or later a controller quorum's log), the records are
// applied to the image and every subscriber is told of the new image.
type Store interface {
	// Image is the current image; it never changes, later ones replace it.
	Image() *Image
	// Propose replays records, in order and as one change, onto the
	// current image. It returns the new image once the change is durable
	// and every subscriber was told; a record that does not fit refuses the
	// whole change (ErrInvalidRecord) and changes nothing, as does a change
	// the store cannot make durable (its error is returned as it is).
	Propose(records ...Record) (*Image, error)
	// Update is Propose of the records decide returns, decide running on
	// the current image and serialized with every other change, as the
	// Kafka controller runs each write operation on its latest image. An
	// error of decide is returned as it is and changes nothing; decide must
	// neither propose nor modify the image.
	Update(decide func(img *Image) ([]Record, error)) (*Image, error)
	// Subscribe calls fn with the old and the new image after each change,
	// in order, until the returned cancel is called. fn must neither propose
	// nor cancel.
	Subscribe(fn func(old, new *Image)) (cancel func())
}
