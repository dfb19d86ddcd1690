package mcpserver

import (
	"container/list"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/limit"
	"github.com/toolscript/toolscript/host/platform/positive"
	"github.com/toolscript/toolscript/host/runtime/sandboxio"
	"github.com/toolscript/toolscript/host/serve/auth"
)

// keptURIPrefix begins the URI of every result kept as a resource.
const keptURIPrefix = "toolscript://results/"

// LargeResults says when an execution's result is too large to answer
// inline and how the results kept instead are bounded ([server]
// max_inline_result and results_kept_*). Zero fields take the defaults.
type LargeResults struct {
	// MaxInline is the most characters of a result's JSON text answered
	// inline; a larger one is kept and answered with a resource_link.
	MaxInline int
	// PerUser bounds how many results one user has kept; BytesPerUser
	// their bytes; BytesTotal the bytes of every user's. The oldest is
	// evicted to make room.
	PerUser      int
	BytesPerUser int64
	BytesTotal   int64
	// KeepFor is how long a result is kept.
	KeepFor time.Duration
	// ToFile writes a large result of a real run with io into the io
	// directory (sandboxio.ResultsDir, within the same bounds per io
	// directory) instead of keeping it as a resource, for the scripts
	// that come after to read. A dry run or a plan run, or one without
	// io, keeps it as a resource all the same.
	ToFile bool
}

// The defaults of LargeResults. 25,000 characters is what the discovery
// pages keep to: a share of a model's context an answer can take. Sixteen
// results of a user are more than a conversation refers back to; 16 MiB is
// four results at luau's default result cap (4 MiB); an hour covers a
// conversation's follow-up reads; 64 MiB across users matches the host's
// default max_host_bytes_total, and with a host budget the kept results
// hold at most half of it (the sdk's responses share the rest).
const (
	DefaultMaxInlineResult  = 25_000
	DefaultKeptPerUser      = 16
	DefaultKeptBytesPerUser = 16 << 20
	DefaultKeptBytesTotal   = 64 << 20
	DefaultKeptFor          = time.Hour
	// keptTombstones bounds the URIs gone that are remembered, and
	// keptTotal the results kept across users whatever their size (a
	// small max_inline_result keeps small results).
	keptTombstones = 4096
	keptTotal      = 4096
)

func (l LargeResults) withDefaults() LargeResults {
	l.MaxInline = positive.Or(l.MaxInline, DefaultMaxInlineResult)
	l.PerUser = positive.Or(l.PerUser, DefaultKeptPerUser)
	l.BytesPerUser = positive.Or(l.BytesPerUser, DefaultKeptBytesPerUser)
	l.BytesTotal = positive.Or(l.BytesTotal, DefaultKeptBytesTotal)
	l.KeepFor = positive.Or(l.KeepFor, DefaultKeptFor)
	return l
}

// keptResult is one result kept as a resource.
type keptResult struct {
	uri    string
	user   auth.User
	text   []byte
	expiry time.Time
	timer  *time.Timer
	// all and mine are its elements in keptResults.all and its user's list.
	all, mine *list.Element
}

// keptResults holds the results too large to answer inline, each readable
// by its user alone under a random URI, bounded per user (count, bytes)
// and across users (bytes, and the host's budget when there is one): the
// oldest is evicted to make room, and each expires after KeepFor. A URI
// gone (expired, evicted) is remembered for a while so that its user is
// told why.
type keptResults struct {
	cfg    LargeResults
	budget *limit.Bytes // nil: none
	// maxCount bounds the results kept across users (keptTotal).
	maxCount int
	mu       sync.Mutex
	byURI    map[string]*keptResult
	all      *list.List // of *keptResult, oldest first
	users    map[auth.User]*list.List
	bytes    map[auth.User]int64
	total    int64
	// gone remembers why URIs left, oldest first, bounded.
	gone      map[string]tombstone
	goneOrder []string
}

type tombstone struct {
	user   auth.User
	reason string
}

// fileBounds are the bounds of the results written to one io directory
// (LargeResults.ToFile): a user's.
func (k *keptResults) fileBounds() sandboxio.ResultBounds {
	return sandboxio.ResultBounds{Files: k.cfg.PerUser, Bytes: k.cfg.BytesPerUser, For: k.cfg.KeepFor}
}

// resultFileDir is the io directory the large result of the execution of
// ctx is written to: set under LargeResults.ToFile for a real run with io.
func (s *Server) resultFileDir(ctx context.Context) string {
	x, _ := ctx.Value(executionKey{}).(*execution)
	if !s.cfg.LargeResults.ToFile || x == nil || x.script.IO == nil || x.script.Effects.Mode() != effects.Real {
		return ""
	}
	return x.script.IO.Dir
}

func newKeptResults(cfg LargeResults, budget *limit.Bytes) *keptResults {
	cfg = cfg.withDefaults()
	if budget != nil && cfg.BytesTotal > budget.Size()/2 {
		cfg.BytesTotal = max(budget.Size()/2, 1)
	}
	return &keptResults{cfg: cfg, budget: budget, maxCount: keptTotal, byURI: map[string]*keptResult{}, all: list.New(),
		users: map[auth.User]*list.List{}, bytes: map[auth.User]int64{}, gone: map[string]tombstone{}}
}

// keep keeps text for user and returns its URI and when it expires.
func (k *keptResults) keep(user auth.User, text []byte) (string, time.Time, error) {
	n := int64(len(text))
	if n > k.cfg.BytesPerUser || n > k.cfg.BytesTotal {
		return "", time.Time{}, fmt.Errorf("its %d bytes are more than a user may keep (%d bytes; [server] results_kept_bytes_per_user) "+
			"or than all users may (%d bytes; [server] results_kept_bytes_total)", n, k.cfg.BytesPerUser, k.cfg.BytesTotal)
	}
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return "", time.Time{}, err
	}
	uri := keptURIPrefix + hex.EncodeToString(id[:])
	k.mu.Lock()
	defer k.mu.Unlock()
	mine := k.users[user]
	for mine != nil && mine.Len() > 0 && (mine.Len() >= k.cfg.PerUser || k.bytes[user]+n > k.cfg.BytesPerUser) {
		k.drop(mine.Front().Value.(*keptResult), "evicted: a newer result of yours took its place")
	}
	for k.all.Len() > 0 && (k.total+n > k.cfg.BytesTotal || k.all.Len() >= k.maxCount) {
		k.drop(k.all.Front().Value.(*keptResult), "evicted: newer results took its place")
	}
	if k.budget != nil {
		for k.budget.TryAcquire(n) != nil {
			if k.all.Len() == 0 {
				return "", time.Time{}, fmt.Errorf("the host's budget %s has no room for its %d bytes", k.budget.Name(), n)
			}
			k.drop(k.all.Front().Value.(*keptResult), "evicted: the host needed its room")
		}
	}
	if mine = k.users[user]; mine == nil {
		mine = list.New()
		k.users[user] = mine
	}
	r := &keptResult{uri: uri, user: user, text: text, expiry: time.Now().Add(k.cfg.KeepFor)}
	r.all, r.mine = k.all.PushBack(r), mine.PushBack(r)
	k.byURI[uri] = r
	k.bytes[user] += n
	k.total += n
	r.timer = time.AfterFunc(k.cfg.KeepFor, func() { k.expire(r) })
	return uri, r.expiry, nil
}

// expire drops r when its time is up, unless it is gone already.
func (k *keptResults) expire(r *keptResult) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.byURI[r.uri] == r {
		k.drop(r, "expired: results are kept for "+duration(k.cfg.KeepFor))
	}
}

// drop forgets r, remembering why; k.mu is held.
func (k *keptResults) drop(r *keptResult, reason string) {
	r.timer.Stop()
	delete(k.byURI, r.uri)
	k.all.Remove(r.all)
	mine := k.users[r.user]
	mine.Remove(r.mine)
	n := int64(len(r.text))
	k.total -= n
	if k.bytes[r.user] -= n; mine.Len() == 0 {
		delete(k.users, r.user)
		delete(k.bytes, r.user)
	}
	if k.budget != nil {
		k.budget.Release(n)
	}
	if len(k.goneOrder) >= keptTombstones {
		delete(k.gone, k.goneOrder[0])
		k.goneOrder = k.goneOrder[1:]
	}
	k.gone[r.uri] = tombstone{user: r.user, reason: reason}
	k.goneOrder = append(k.goneOrder, r.uri)
}

// read returns the result kept under uri for user. Another user's URI,
// or one never given, is not found, in the same words; the user's own
// URI that is gone says why.
func (k *keptResults) read(user auth.User, uri string) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if r := k.byURI[uri]; r != nil && r.user == user {
		return r.text, nil
	}
	if t, ok := k.gone[uri]; ok && t.user == user {
		return nil, fmt.Errorf("this result is no longer kept (%s): run the script again", t.reason)
	}
	return nil, fmt.Errorf("no result of yours is kept under this URI")
}
