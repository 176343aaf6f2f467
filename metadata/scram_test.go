package metadata_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/strata-io/strata/metadata"
)

// TestScramCredentialsReplay checks a user keeps one credential per
// mechanism, a second record replaces it, a removal takes only that
// mechanism's, and removing one there is not is refused with nothing
// changed.
func TestScramCredentialsReplay(t *testing.T) {
	alice256 := metadata.ScramUser{Name: "alice", Mechanism: metadata.ScramSHA256}
	alice512 := metadata.ScramUser{Name: "alice", Mechanism: metadata.ScramSHA512}
	img := replayAll(t, []metadata.Record{
		metadata.UserScramCredentialRecord{Name: "alice", Mechanism: metadata.ScramSHA256, Salt: []byte("s1"), Iterations: 4096},
		metadata.UserScramCredentialRecord{Name: "alice", Mechanism: metadata.ScramSHA512, Salt: []byte("s2"), Iterations: 8192},
		metadata.UserScramCredentialRecord{Name: "alice", Mechanism: metadata.ScramSHA256, Salt: []byte("s3"), Iterations: 5000},
		metadata.UserScramCredentialRecord{Name: "bob", Mechanism: metadata.ScramSHA256, Salt: []byte("s4"), Iterations: 4096},
	})
	if c, ok := img.Access.Scram.Credential(alice256); !ok || string(c.Salt) != "s3" || c.Iterations != 5000 {
		t.Fatalf("alice's SCRAM-SHA-256 = %+v, %v", c, ok)
	}
	d := metadata.NewDelta(img)
	if err := d.Replay(metadata.RemoveUserScramCredentialRecord{Name: "alice", Mechanism: metadata.ScramSHA256}); err != nil {
		t.Fatal(err)
	}
	if err := d.Replay(metadata.RemoveUserScramCredentialRecord{Name: "alice", Mechanism: metadata.ScramSHA256}); !errors.Is(err, metadata.ErrInvalidRecord) {
		t.Fatalf("second removal: %v, want ErrInvalidRecord", err)
	}
	if err := d.Replay(metadata.RemoveUserScramCredentialRecord{Name: "carol", Mechanism: metadata.ScramSHA512}); !errors.Is(err, metadata.ErrInvalidRecord) {
		t.Fatalf("removal of an unknown user: %v, want ErrInvalidRecord", err)
	}
	after := d.Apply()
	want := []metadata.ScramUser{alice512, {Name: "bob", Mechanism: metadata.ScramSHA256}}
	if got := after.Access.Scram.Users(); !reflect.DeepEqual(got, want) {
		t.Fatalf("users = %v, want %v", got, want)
	}
	if _, ok := img.Access.Scram.Credential(alice256); !ok {
		t.Fatal("the base image lost a credential")
	}
	if !sameImage(after, replayAll(t, metadata.ImageRecords(after))) {
		t.Fatal("the image's records do not rebuild its credentials")
	}
}
