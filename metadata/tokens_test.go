package metadata_test

import (
	"errors"
	"testing"

	"github.com/strata-io/strata/metadata"
)

// TestDelegationTokensReplay checks a token record creates a token, a second
// one with its id replaces it (a renewal), a removal takes it, removing one
// there is not is refused with nothing changed, and the image's records
// rebuild the tokens.
func TestDelegationTokensReplay(t *testing.T) {
	img := replayAll(t, []metadata.Record{
		metadata.DelegationTokenRecord{Owner: "User:alice", Requester: "User:alice", Renewers: []string{"User:bob"},
			IssueTimestamp: 1, MaxTimestamp: 100, ExpirationTimestamp: 10, TokenID: "t1"},
		metadata.DelegationTokenRecord{Owner: "User:bob", Requester: "User:admin", IssueTimestamp: 2, MaxTimestamp: 100, ExpirationTimestamp: 20, TokenID: "t2"},
		metadata.DelegationTokenRecord{Owner: "User:alice", Requester: "User:alice", Renewers: []string{"User:bob"},
			IssueTimestamp: 1, MaxTimestamp: 100, ExpirationTimestamp: 50, TokenID: "t1"},
	})
	tok, ok := img.Access.Tokens.Token("t1")
	if !ok || tok.ExpirationTimestamp != 50 || !tok.OwnerOrRenewer("User:bob") || tok.OwnerOrRenewer("User:carol") {
		t.Fatalf("t1 = %+v, %v; want the renewed token, bob a renewer", tok, ok)
	}
	if t2, _ := img.Access.Tokens.Token("t2"); !t2.OwnerOrRenewer("User:admin") {
		t.Fatal("the requester of t2 is not its owner or renewer")
	}
	d := metadata.NewDelta(img)
	if err := d.Replay(metadata.RemoveDelegationTokenRecord{TokenID: "t1"}); err != nil {
		t.Fatal(err)
	}
	if err := d.Replay(metadata.RemoveDelegationTokenRecord{TokenID: "t1"}); !errors.Is(err, metadata.ErrInvalidRecord) {
		t.Fatalf("second removal: %v, want ErrInvalidRecord", err)
	}
	if err := d.Replay(metadata.DelegationTokenRecord{Owner: "User:x"}); !errors.Is(err, metadata.ErrInvalidRecord) {
		t.Fatalf("a token without an id: %v, want ErrInvalidRecord", err)
	}
	after := d.Apply()
	if got := after.Access.Tokens.All(); len(got) != 1 || got[0].ID != "t2" {
		t.Fatalf("tokens after the removal: %+v, want t2 alone", got)
	}
	if _, ok := img.Access.Tokens.Token("t1"); !ok {
		t.Fatal("the base image lost a token")
	}
	if !sameImage(img, replayAll(t, metadata.ImageRecords(img))) {
		t.Fatal("the image's records do not rebuild its tokens")
	}
}
