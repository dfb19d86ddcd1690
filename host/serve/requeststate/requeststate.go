// Package requeststate owns the sealed requestState of a paused execution:
// what an execution that waits for a person's answer hands to the client
// (an MCP input_required result), and what the client's retry brings back
// to any replica to resume it. It owns
//
//   - the State: what the pause binds the state to (Binding: the user,
//     the client, the script's and the arguments' sha256), its expiry, the
//     execution's id (a process that still holds the paused execution may
//     continue it in place), the Question being asked, the trace of the
//     execution's prefix (zstd-compressed) and the digests of the files
//     the prefix read or wrote;
//   - sealing and opening it (Sealer): AES-256-GCM under a 32-byte key the
//     replicas share ([effects] state_key; NewKey for a per-process one),
//     named by a key id so a state sealed under another key is told
//     apart from a tampered one. Open bounds the token before decoding
//     it, and refuses a tampered, truncated, expired, another user's,
//     another client's, another script's, other arguments' and an
//     already resumed state, each with its own error (errors.Is against
//     the Err values), before anything runs;
//   - a prefix too large to travel in the state (past MaxSealedBytes),
//     kept in a spill directory ([effects] state_dir) and named by the
//     state with its sha256; the directory is bounded (MaxSpillDirBytes,
//     MaxSpillUserBytes), a state's file removed once it is resumed and
//     pruned once it has expired;
//   - Spent, the bounded memory of the states this process resumed, until
//     they expire: a state resumes at most once per process.
package requeststate

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/effects/trace"
	"github.com/toolscript/toolscript/host/runtime/sandboxio"
)

// The bounds of a state.
const (
	// KeyBytes is the size of a key: AES-256.
	KeyBytes = 32
	// MaxSealedBytes bounds a state's sealed payload (its ciphertext);
	// past it the prefix is spilled to a file (Sealer's spill directory).
	MaxSealedBytes = 1 << 20
	// MaxTokenBytes bounds a token as it arrives (base64 of the framing
	// and at most MaxSealedBytes): a longer one is refused before it is
	// decoded.
	MaxTokenBytes = (headerBytes+MaxSealedBytes+tagBytes+2)/3*4 + 4
	// MaxSpillBytes bounds a spilled prefix's compressed file.
	MaxSpillBytes = trace.MaxBytes
	// MaxSpillDirBytes bounds the spilled prefixes in the spill directory
	// together, MaxSpillUserBytes one user's: past them a pause whose
	// prefix cannot travel in its state resumes only in place.
	MaxSpillDirBytes  = 2 << 30
	MaxSpillUserBytes = 512 << 20
	// MaxFiles bounds the files a state names.
	MaxFiles = sandboxio.MaxDigestFiles
)

// The token's framing: version, key id, the ciphertext's length, nonce.
const (
	version     = 1
	keyIDBytes  = 8
	nonceBytes  = 12
	tagBytes    = 16
	headerBytes = 1 + keyIDBytes + 4 + nonceBytes
)

// The errors of Open; each Open error wraps one of them.
var (
	ErrTooLarge      = errors.New("the requestState is too large")
	ErrMalformed     = errors.New("the requestState is not one this server issued")
	ErrTruncated     = errors.New("the requestState is cut short")
	ErrUnknownKey    = errors.New("the requestState was sealed with another key")
	ErrTampered      = errors.New("the requestState was modified")
	ErrExpired       = errors.New("the requestState has expired")
	ErrOtherUser     = errors.New("the requestState belongs to another user")
	ErrOtherClient   = errors.New("the requestState belongs to another client")
	ErrOtherScript   = errors.New("the requestState is for another script")
	ErrOtherArgs     = errors.New("the requestState is for other arguments")
	ErrSpent         = errors.New("the requestState was resumed already")
	ErrSpentFull     = errors.New("too many paused executions resumed recently")
	ErrPrefixMissing = errors.New("the paused execution's prefix is missing or changed")
)

// Binding is what a state is bound to: the retry must come from the same
// user and client, for the same script and arguments.
type Binding struct {
	User            string `json:"user"`
	Client          string `json:"client"`
	ScriptSHA256    string `json:"script_sha256"`
	ArgumentsSHA256 string `json:"arguments_sha256"`
}

// File is a file the prefix read or wrote, and its sha256 at the pause
// (empty: it did not exist): sandboxio takes them (Digests) and checks
// them (Unchanged).
type File = sandboxio.FileDigest

// State is a paused execution.
type State struct {
	// ID names the state (Seal sets it): Spent remembers it.
	ID      string    `json:"id"`
	Binding Binding   `json:"binding"`
	Expiry  time.Time `json:"expiry"`
	// Execution is the paused execution's id in the process that holds
	// it, for a retry that reaches that process.
	Execution string           `json:"execution,omitempty"`
	Question  effects.Question `json:"question"`
	// Prefix is the trace of the execution up to the pause, as Seal is
	// given it (uncompressed); Open leaves it nil: PrefixReader reads it.
	Prefix []byte `json:"-"`
	Files  []File `json:"files,omitempty"`
	// InPlaceOnly, when set, says why the state carries no prefix (a
	// file was open at the pause, say): it resumes only in the process
	// that holds the paused execution.
	InPlaceOnly string `json:"in_place_only,omitempty"`

	// Spill names a prefix kept in a file, and its digest.
	Spill *Spill `json:"spill,omitempty"`
	// compressed is an opened state's inline prefix (zstd).
	compressed []byte
	// spillDir is where an opened state's spilled prefix is.
	spillDir string
}

// Spill is a prefix kept in a file of the spill directory: its name, and
// the sha256 and size of its (compressed) content.
type Spill struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
	Bytes  int64  `json:"bytes"`
}

// Key is a key states are sealed with, and its id.
type Key struct {
	id   [keyIDBytes]byte
	aead cipher.AEAD
}

// NewKey returns a random key: a process's own, when the configuration
// gives none (its states resume only in that process).
func NewKey() (Key, error) {
	secret := make([]byte, KeyBytes)
	if _, err := rand.Read(secret); err != nil {
		return Key{}, fmt.Errorf("requeststate: a random key: %w", err)
	}
	return KeyFrom(secret)
}

// KeyFrom is the key of secret, which must be KeyBytes long.
func KeyFrom(secret []byte) (Key, error) {
	if len(secret) != KeyBytes {
		return Key{}, fmt.Errorf("requeststate: a key is %d bytes, not %d", KeyBytes, len(secret))
	}
	block, err := aes.NewCipher(secret)
	if err != nil {
		return Key{}, fmt.Errorf("requeststate: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return Key{}, fmt.Errorf("requeststate: %w", err)
	}
	k := Key{aead: aead}
	sum := sha256.Sum256(append([]byte("toolscript requestState key id\x00"), secret...))
	copy(k.id[:], sum[:])
	return k, nil
}

// ID is the key's id (hex): a digest of the key, which names it and does
// not reveal it.
func (k Key) ID() string { return hex.EncodeToString(k.id[:]) }

// Sealer seals states with its first key and opens those of any of its
// keys (a key being rotated out). Its methods are safe for concurrent use.
type Sealer struct {
	keys []Key
	// spillDir keeps prefixes too large to travel ("" : none).
	spillDir string
	spent    *Spent
}

// NewSealer returns a sealer with keys (at least one; the first seals),
// that spills large prefixes to spillDir ("" for none; the spilled
// prefixes of expired states there are removed) and remembers resumed
// states in spent.
func NewSealer(spillDir string, spent *Spent, keys ...Key) (*Sealer, error) {
	if len(keys) == 0 {
		return nil, errors.New("requeststate: a sealer needs a key")
	}
	if spent == nil {
		return nil, errors.New("requeststate: a sealer needs a Spent")
	}
	if spillDir != "" {
		if _, err := pruneSpills(spillDir, time.Now()); err != nil {
			return nil, err
		}
	}
	return &Sealer{keys: keys, spillDir: spillDir, spent: spent}, nil
}

// Seal seals st (its ID is set) into a token. The prefix is compressed;
// when the sealed state would pass MaxSealedBytes it is written to the
// spill directory and the state names it (an error when there is none).
func (s *Sealer) Seal(st *State) (string, error) {
	if len(st.Files) > MaxFiles {
		return "", fmt.Errorf("requeststate: the prefix touched %d files, more than %d", len(st.Files), MaxFiles)
	}
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return "", fmt.Errorf("requeststate: %w", err)
	}
	st.ID = hex.EncodeToString(id)
	compressed := compress(st.Prefix)
	meta := *st
	meta.Spill = nil
	plain, err := plaintext(&meta, compressed)
	if err != nil {
		return "", err
	}
	if len(plain)+tagBytes > MaxSealedBytes {
		if meta.Spill, err = s.spill(st, compressed, time.Now()); err != nil {
			return "", err
		}
		if plain, err = plaintext(&meta, nil); err != nil {
			return "", err
		}
		if len(plain)+tagBytes > MaxSealedBytes {
			return "", fmt.Errorf("requeststate: the state is %d bytes without its prefix, more than %d", len(plain), MaxSealedBytes)
		}
		st.Spill = meta.Spill
	}
	k := s.keys[0]
	frame := make([]byte, headerBytes, headerBytes+len(plain)+tagBytes)
	frame[0] = version
	copy(frame[1:], k.id[:])
	binary.BigEndian.PutUint32(frame[1+keyIDBytes:], uint32(len(plain)+tagBytes))
	if _, err := rand.Read(frame[headerBytes-nonceBytes : headerBytes]); err != nil {
		return "", fmt.Errorf("requeststate: %w", err)
	}
	frame = k.aead.Seal(frame, frame[headerBytes-nonceBytes:headerBytes], plain, frame[:headerBytes])
	return base64.RawURLEncoding.EncodeToString(frame), nil
}

// plaintext is the metadata's JSON, its length first, then the prefix.
func plaintext(meta *State, prefix []byte) ([]byte, error) {
	js, err := json.Marshal(meta)
	if err != nil {
		return nil, fmt.Errorf("requeststate: %w", err)
	}
	out := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(js)+len(prefix)), uint32(len(js)))
	return append(append(out, js...), prefix...), nil
}

// Open opens token for a retry from binding at now: the state, or an
// error that wraps one of the Err values and says what is wrong. An
// opened state is spent: opening it again in this process is ErrSpent.
func (s *Sealer) Open(token string, binding Binding, now time.Time) (*State, error) {
	st, err := s.Verify(token, binding, now)
	if err != nil {
		return nil, err
	}
	if err := s.Spend(st, now); err != nil {
		return nil, err
	}
	return st, nil
}

// Spend uses st up at now: ErrSpent when it was resumed already (in this
// process, or by a replica sharing the Spent's directory).
func (s *Sealer) Spend(st *State, now time.Time) error {
	return s.spent.Spend(st.ID, st.Binding.User, st.Expiry, now)
}

// Verify opens token as Open does, without spending it: for a retry that
// may yet be refused with nothing run, and must leave the state to the
// retry that resumes it (Spend).
func (s *Sealer) Verify(token string, binding Binding, now time.Time) (*State, error) {
	if len(token) > MaxTokenBytes {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrTooLarge, len(token), MaxTokenBytes)
	}
	frame, err := base64.RawURLEncoding.Strict().DecodeString(token)
	if err != nil {
		return nil, notBase64(token)
	}
	if len(frame) < headerBytes {
		return nil, fmt.Errorf("%w: %d bytes, shorter than its framing", ErrTruncated, len(frame))
	}
	if frame[0] != version {
		return nil, fmt.Errorf("%w: version %d, this server reads %d", ErrMalformed, frame[0], version)
	}
	want := int(binary.BigEndian.Uint32(frame[1+keyIDBytes:]))
	body := frame[headerBytes:]
	switch {
	case len(body) < want:
		return nil, fmt.Errorf("%w: %d of its %d sealed bytes", ErrTruncated, len(body), want)
	case len(body) > want:
		return nil, fmt.Errorf("%w: %d bytes follow its %d sealed bytes", ErrTampered, len(body)-want, want)
	}
	key, ok := s.key(frame[1 : 1+keyIDBytes])
	if !ok {
		return nil, fmt.Errorf("%w (key id %x; this server's is %s): the replicas' [effects] state_key differ, the key was rotated, "+
			"or the process that paused it restarted without one", ErrUnknownKey, frame[1:1+keyIDBytes], s.keys[0].ID())
	}
	plain, err := key.aead.Open(nil, frame[headerBytes-nonceBytes:headerBytes], body, frame[:headerBytes])
	if err != nil {
		return nil, fmt.Errorf("%w: it does not authenticate", ErrTampered)
	}
	st, err := decodePlain(plain)
	if err != nil {
		return nil, err
	}
	if err := check(st, binding, now); err != nil {
		return nil, err
	}
	st.spillDir = s.spillDir
	return st, nil
}

// notBase64 is the error of a token that is not base64url: cut short
// when its whole groups of four characters are the start of a state that
// needs more, else malformed.
func notBase64(token string) error {
	whole, err := base64.RawURLEncoding.Strict().DecodeString(token[:len(token)/4*4])
	if err == nil && len(whole) >= headerBytes && whole[0] == version &&
		int(binary.BigEndian.Uint32(whole[1+keyIDBytes:])) > len(whole)-headerBytes {
		return fmt.Errorf("%w: %d characters, not a whole state", ErrTruncated, len(token))
	}
	return fmt.Errorf("%w: not base64url", ErrMalformed)
}

func (s *Sealer) key(id []byte) (Key, bool) {
	for _, k := range s.keys {
		if bytes.Equal(k.id[:], id) {
			return k, true
		}
	}
	return Key{}, false
}

// decodePlain reads an authenticated plaintext (which this server wrote:
// a failure is a bug or another version's state).
func decodePlain(plain []byte) (*State, error) {
	if len(plain) < 4 || int(binary.BigEndian.Uint32(plain)) > len(plain)-4 {
		return nil, fmt.Errorf("%w: its content is malformed", ErrMalformed)
	}
	n := int(binary.BigEndian.Uint32(plain))
	var st State
	if err := json.Unmarshal(plain[4:4+n], &st); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	st.compressed = plain[4+n:]
	return &st, nil
}

// check refuses a state bound to something else than binding, or expired
// at now.
func check(st *State, b Binding, now time.Time) error {
	switch {
	case st.Binding.User != b.User:
		return ErrOtherUser
	case st.Binding.Client != b.Client:
		return fmt.Errorf("%w (paused for %q, retried by %q)", ErrOtherClient, cut(st.Binding.Client), cut(b.Client))
	case st.Binding.ScriptSHA256 != b.ScriptSHA256:
		return fmt.Errorf("%w (paused running the script of sha256 %s; the retry's is %s)", ErrOtherScript, cut(st.Binding.ScriptSHA256), cut(b.ScriptSHA256))
	case st.Binding.ArgumentsSHA256 != b.ArgumentsSHA256:
		return fmt.Errorf("%w: the retry must repeat the paused call's arguments", ErrOtherArgs)
	case !now.Before(st.Expiry):
		return fmt.Errorf("%w (at %s)", ErrExpired, st.Expiry.UTC().Format(time.RFC3339))
	}
	return nil
}

func cut(s string) string {
	if len(s) > 100 {
		return s[:100] + "..."
	}
	return s
}

// PrefixReader reads the prefix's trace, decompressing it: from the state,
// or from its spill file, whose digest and size are checked first.
func (st *State) PrefixReader() (io.ReadCloser, error) {
	compressed := st.compressed
	if st.Spill != nil {
		data, err := readSpill(st.spillDir, st.Spill)
		if err != nil {
			return nil, err
		}
		compressed = data
	}
	dec, err := zstd.NewReader(bytes.NewReader(compressed), zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxMemory(trace.MaxBytes), zstd.WithDecoderMaxWindow(8<<20))
	if err != nil {
		return nil, fmt.Errorf("requeststate: %w", err)
	}
	return dec.IOReadCloser(), nil
}

// compress is data in zstd.
func compress(data []byte) []byte {
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedDefault))
	return enc.EncodeAll(data, nil)
}
