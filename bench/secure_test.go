package bench

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestWireGeneratorOverSASLSSL runs the SASL_SSL pass's clients against
// the real strata binary: the wire producer and consumer, through TLS and
// SASL/PLAIN, count every record, and the listener they used speaks only
// TLS (a plaintext ApiVersions gets no answer).
func TestWireGeneratorOverSASLSSL(t *testing.T) {
	bin := buildStrata(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	b, err := newBroker(Strata, SASLSSL, bin, "", dir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Kill()
	d := single{Broker: b}
	if d.secure, err = newSecureListener(filepath.Join(dir, "tls")); err != nil {
		t.Fatal(err)
	}
	if err := addSecureListener(b, d.secure); err != nil {
		t.Fatal(err)
	}
	if err := startBroker(ctx, b); err != nil {
		t.Fatal(err)
	}
	const records, partitions = 10_000, 3
	if _, err := runProduceWire(ctx, d, ProduceSpec{Name: "W1", Topic: "wire", Partitions: partitions, Records: records, ValueSize: 100, BatchBytes: 4096}, "produce"); err != nil {
		t.Fatal(err)
	}
	cr, err := runConsumeWire(ctx, d, "W4", "wire", partitions, records, 100, "consume")
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(records + partitions); cr.Records != want {
		t.Fatalf("wire consumer counted %d records over SASL_SSL, want %d", cr.Records, want)
	}
	w, err := (*clientSecurity)(nil).dial(d.secure.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	_ = w.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := w.roundTrip(kmsg.NewPtrApiVersionsRequest()); err == nil {
		t.Fatal("the SASL_SSL listener answered a plaintext ApiVersions")
	}
}
