// Package coordinator holds the broker-side state machines that sit above the
// partition logs: today the producer id allocator (InitProducerId); later the
// group coordinator (consumer groups and committed offsets) and the
// transaction coordinator. It depends on storage only; the broker layer calls
// it and the protocol package knows nothing of it.
package coordinator
