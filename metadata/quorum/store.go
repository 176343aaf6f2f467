// Package quorum is the metadata store of a controller quorum: the
// metadata image is the state machine of a Raft log (hashicorp/raft), as
// the image of Kafka's KRaft controllers is that of __cluster_metadata.
// Every change is one log entry, a batch of metadata records (codec.go)
// that every node replays atomically onto its image in log order (fsm.go),
// so all nodes go through the same images. Changes are proposed on the
// leader (Kafka's active controller); a follower refuses them with
// ErrNotController naming the leader.
//
// On disk, in the node's metadata dir (DirName under the log dir):
//
//	raft.db                   the Raft log and its term and vote (raft-boltdb)
//	snapshots/<term>-<index>-<ms>/meta.json, state.bin
//	                          raft's file snapshots, the newest two kept; state.bin
//	                          is one batch holding the records of the whole image
//
// Raft compacts the log after each snapshot, keeping TrailingLogs entries
// for slow followers. A restarted node restores its newest snapshot, then
// replays the log after it.
//
// These files are the exception to "every file op goes through
// storage/vfs": raft-boltdb and raft's snapshot store open them with the
// os package directly, and so does this package to create the dir.
package quorum

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
	"go.uber.org/zap"

	"github.com/strata-io/strata/metadata"
)

// DirName is the quorum's metadata dir in the log dir.
const DirName = "__strata_metadata"

// ErrNotController is the error of a change proposed on a node that is not
// the quorum's leader (Kafka's NOT_CONTROLLER); errors.As finds the
// *NotControllerError that says who leads.
var ErrNotController = errors.New("this node is not the active controller")

// NotControllerError says which node leads the quorum, LeaderID -1 and
// LeaderAddr "" while none is known.
type NotControllerError struct {
	NodeID     int32
	LeaderID   int32
	LeaderAddr string
}

func (e *NotControllerError) Error() string {
	if e.LeaderID < 0 {
		return fmt.Sprintf("node %d: %v; no leader is known", e.NodeID, ErrNotController)
	}
	return fmt.Sprintf("node %d: %v; the leader is node %d at %s", e.NodeID, ErrNotController, e.LeaderID, e.LeaderAddr)
}

func (e *NotControllerError) Is(target error) bool { return target == ErrNotController }

// Config is one node of the quorum.
type Config struct {
	NodeID int32
	Dir    string  // the metadata dir: <log dir>/DirName
	Voters []Voter // controller.quorum.voters; NodeID must be one of them, unless Observer
	// Observer opens a node that is not a voter: a broker-only node, a raft
	// non-voter that the active controller adds (AddObserver) when it
	// registers, as a Kafka broker fetches the metadata log without
	// voting. It never bootstraps: raft's configuration reaches it from the
	// leader. Transport must be given.
	Observer bool
	// Transport carries raft's messages; nil is TCP on this node's voter
	// address.
	Transport raft.Transport
	Logger    *zap.Logger // nil: none

	// Raft's timing and compaction; zero keeps raft's defaults.
	HeartbeatTimeout  time.Duration
	ElectionTimeout   time.Duration
	CommitTimeout     time.Duration // idle time after which the leader tells followers its commit index
	SnapshotInterval  time.Duration
	SnapshotThreshold uint64 // log entries between snapshots
	TrailingLogs      uint64 // log entries kept after a snapshot
	// ApplyTimeout bounds how long a change waits to be committed (10s when
	// zero).
	ApplyTimeout time.Duration
}

// Store is a metadata.Store whose changes are committed by the quorum.
type Store struct {
	id       int32
	raft     *raft.Raft
	fsm      *fsm
	timeout  time.Duration
	closers  []func() error
	logger   *zap.Logger
	hurrying atomic.Bool // RaftConnClosed is asking whether the leader is gone, or electing

	mu   sync.Mutex   // serializes Update, as Kafka's controller event queue
	next atomic.Int64 // during decide: the index its change is to be written at

	progress progressBook // the followers' AppendEntries replies (progress.go)
}

var _ metadata.Store = (*Store)(nil)

// Open starts the node: it opens (or creates) the metadata dir, restores
// the newest snapshot and replays the log after it, and, when the dir holds
// no state yet, bootstraps the configuration with every voter, as every
// Kafka node is formatted with the same voters.
func Open(cfg Config) (*Store, error) {
	var self *Voter
	servers := make([]raft.Server, 0, len(cfg.Voters))
	for i, v := range cfg.Voters {
		if v.ID == cfg.NodeID {
			self = &cfg.Voters[i]
		}
		servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: serverID(v.ID), Address: raft.ServerAddress(v.Addr)})
	}
	switch {
	case cfg.Observer && self != nil:
		return nil, fmt.Errorf("metadata quorum: node %d is one of the voters %v, so it cannot be an observer", cfg.NodeID, cfg.Voters)
	case cfg.Observer && cfg.Transport == nil:
		return nil, fmt.Errorf("metadata quorum: observer %d has no transport", cfg.NodeID)
	case !cfg.Observer && self == nil:
		return nil, fmt.Errorf("metadata quorum: node %d is not one of the voters %v", cfg.NodeID, cfg.Voters)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	hlog := raftLogger(logger.With(zap.Int32("node", cfg.NodeID)))

	s := &Store{id: cfg.NodeID, fsm: newFSM(), timeout: cfg.ApplyTimeout, logger: logger.With(zap.Int32("node", cfg.NodeID))}
	if s.timeout == 0 {
		s.timeout = 10 * time.Second
	}
	fail := func(err error) (*Store, error) {
		s.close()
		return nil, fmt.Errorf("metadata quorum node %d, dir %s: %w", cfg.NodeID, cfg.Dir, err)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return fail(err)
	}
	bolt, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(cfg.Dir, "raft.db"), BoltOptions: &bbolt.Options{Timeout: time.Second}})
	if err != nil {
		return fail(fmt.Errorf("open raft.db: %w", err))
	}
	s.closers = append(s.closers, bolt.Close)
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.Dir, 2, hlog)
	if err != nil {
		return fail(err)
	}
	trans := cfg.Transport
	if trans == nil {
		tcp, err := raft.NewTCPTransportWithLogger(self.Addr, nil, 3, 10*time.Second, hlog)
		if err != nil {
			return fail(fmt.Errorf("controller listener %s: %w", self.Addr, err))
		}
		s.closers = append(s.closers, tcp.Close)
		trans = tcp
	}

	rc := raft.DefaultConfig()
	rc.LocalID = serverID(cfg.NodeID)
	rc.Logger = hlog
	if cfg.HeartbeatTimeout > 0 {
		rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	}
	// hurryElection lowers the heartbeat timeout to the lease, and raft
	// refuses a lease longer than the heartbeat timeout.
	rc.LeaderLeaseTimeout = leaderLease(rc.HeartbeatTimeout)
	if cfg.ElectionTimeout > 0 {
		rc.ElectionTimeout = cfg.ElectionTimeout
	}
	if cfg.CommitTimeout > 0 {
		rc.CommitTimeout = cfg.CommitTimeout
	}
	if cfg.SnapshotInterval > 0 {
		rc.SnapshotInterval = cfg.SnapshotInterval
	}
	if cfg.SnapshotThreshold > 0 {
		rc.SnapshotThreshold = cfg.SnapshotThreshold
	}
	if cfg.TrailingLogs > 0 {
		rc.TrailingLogs = cfg.TrailingLogs
	}

	exists, err := raft.HasExistingState(bolt, bolt, snaps)
	if err != nil {
		return fail(err)
	}
	if !exists && !cfg.Observer {
		if err := raft.BootstrapCluster(rc, bolt, bolt, snaps, trans, raft.Configuration{Servers: servers}); err != nil {
			return fail(fmt.Errorf("bootstrap: %w", err))
		}
	}
	r, err := raft.NewRaft(rc, s.fsm, bolt, bolt, snaps, withProgress(trans, &s.progress))
	if err != nil {
		return fail(err)
	}
	s.raft = r
	s.progress.log.Store(lastIndexer(r))
	return s, nil
}

func serverID(id int32) raft.ServerID { return raft.ServerID(strconv.Itoa(int(id))) }

// AddObserver makes node id, reached at addr, a non-voter of the quorum,
// or gives it its new address: the leader sends it the log from then on.
// A voter stays a voter. Only the leader can.
func (s *Store) AddObserver(id int32, addr string) error {
	if err := s.raft.AddNonvoter(serverID(id), raft.ServerAddress(addr), 0, s.timeout).Error(); err != nil {
		return fmt.Errorf("add observer %d at %s: %w", id, addr, s.raftError(err))
	}
	return nil
}

// Close stops the node; its dir keeps everything committed. A leader hands
// its leadership to a follower first.
func (s *Store) Close() error {
	var errs []error
	if s.raft != nil {
		if s.raft.State() == raft.Leader && len(s.raft.GetConfiguration().Configuration().Servers) > 1 {
			// Hand the leadership on first, as Kafka's active controller
			// resigns, so the others need not wait out an election
			// timeout; if no follower takes it, raft's election follows.
			_ = s.raft.LeadershipTransfer().Error()
		}
		errs = append(errs, s.raft.Shutdown().Error())
	}
	errs = append(errs, s.close())
	return errors.Join(errs...)
}

func (s *Store) close() error {
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i]())
	}
	s.closers = nil
	return errors.Join(errs...)
}

// Image is the image as of the last entry this node applied; it takes no
// lock. On a follower it may lag the leader's.
func (s *Store) Image() *metadata.Image { return s.fsm.img.Load() }

// Leader is the id of the node that leads the quorum as this node knows
// it, ok false while none is known.
func (s *Store) Leader() (id int32, ok bool) {
	_, sid := s.raft.LeaderWithID()
	n, err := strconv.ParseInt(string(sid), 10, 32)
	if sid == "" || err != nil {
		return -1, false
	}
	return int32(n), true
}

// NodeID is this node's id.
func (s *Store) NodeID() int32 { return s.id }

// IsLeader reports whether this node leads the quorum: it is the active
// controller.
func (s *Store) IsLeader() bool { return s.raft.State() == raft.Leader }

// LeaderAddr is the voter address of the node that leads the quorum, ""
// while none is known.
func (s *Store) LeaderAddr() string {
	addr, _ := s.raft.LeaderWithID()
	return string(addr)
}

// AppliedIndex is the index of the last log entry this node applied to
// its image: how far its metadata has caught up (Kafka's metadata offset).
func (s *Store) AppliedIndex() int64 { return int64(s.raft.AppliedIndex()) }

// Propose commits records as one change through the quorum.
func (s *Store) Propose(records ...metadata.Record) (*metadata.Image, error) {
	return s.Update(func(*metadata.Image) ([]metadata.Record, error) { return records, nil })
}

// Update runs decide on the leader's latest image (every entry committed
// before is applied first: a barrier) and commits the records it returns
// as one log entry. It returns once this node applied the entry and told
// its subscribers; a record that does not fit is refused by every node
// alike and changes nothing. On a follower it is ErrNotController. A
// change whose leader lost its leadership while committing it is also
// ErrNotController: it may or may not have been committed, as in Kafka.
func (s *Store) Update(decide func(img *metadata.Image) ([]metadata.Record, error)) (*metadata.Image, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.raft.State() != raft.Leader {
		return s.Image(), s.notController()
	}
	if err := s.raft.Barrier(s.timeout).Error(); err != nil {
		return s.Image(), s.raftError(err)
	}
	old := s.Image()
	s.next.Store(int64(s.raft.LastIndex()) + 1)
	records, err := decide(old)
	if err != nil || len(records) == 0 {
		return old, err
	}
	data, err := metadata.EncodeBatch(records)
	if err != nil {
		return old, err
	}
	f := s.raft.Apply(data, s.timeout)
	if err := f.Error(); err != nil {
		return old, s.raftError(err)
	}
	// A follower learns that an entry is committed from the leader's next
	// AppendEntries, which raft sends at once for a new entry but otherwise
	// only after its commit timeout, 50 to 100 ms: time enough for a client
	// that just created a topic here to ask another node and be told it
	// does not exist. An empty barrier entry, not waited for, carries the
	// commit to them now, as a Kafka follower learns a new high watermark
	// from the fetch it has pending.
	s.raft.Barrier(s.timeout)
	res := f.Response().(applied)
	return res.img, res.err
}

// NextIndex is, for decide in Update, the log index its change is to be
// written at: only the leader appends and Update appends one entry at a
// time, after the barrier. Kafka's broker epoch is the offset of the
// RegisterBrokerRecord, as the controller knows it before writing.
func (s *Store) NextIndex() int64 { return s.next.Load() }

func (s *Store) raftError(err error) error {
	if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) || errors.Is(err, raft.ErrLeadershipTransferInProgress) {
		return fmt.Errorf("%w (%v)", s.notController(), err)
	}
	return fmt.Errorf("metadata quorum node %d: %w", s.id, err)
}

func (s *Store) notController() error {
	e := &NotControllerError{NodeID: s.id, LeaderID: -1}
	addr, _ := s.raft.LeaderWithID()
	if id, ok := s.Leader(); ok {
		e.LeaderID, e.LeaderAddr = id, string(addr)
	}
	return e
}

// Subscribe calls fn with the old and the new image after each change this
// node applies (a refused batch is none) and each snapshot it restores
// after Open, in log order.
func (s *Store) Subscribe(fn func(old, new *metadata.Image)) (cancel func()) {
	return s.fsm.subscribe(fn)
}
