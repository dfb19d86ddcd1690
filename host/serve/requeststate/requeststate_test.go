package requeststate_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/serve/requeststate"
)

var (
	now     = time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	binding = requeststate.Binding{User: "alice", Client: "claude", ScriptSHA256: strings.Repeat("a", 64), ArgumentsSHA256: strings.Repeat("b", 64)}
)

func newKey(t testing.TB) requeststate.Key {
	t.Helper()
	k, err := requeststate.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newSealer(t testing.TB, dir string, keys ...requeststate.Key) *requeststate.Sealer {
	t.Helper()
	s, err := requeststate.NewSealer(dir, requeststate.NewSpent(0), keys...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newState(prefix []byte) *requeststate.State {
	return &requeststate.State{
		Binding:   binding,
		Expiry:    now.Add(10 * time.Minute),
		Execution: "exec-1",
		Question:  effects.Question{Effect: effects.Effect{Op: effects.OpCall, Function: "sdk.gh.issues_create", Method: "POST"}, Rule: "ask"},
		Prefix:    prefix,
		Files:     []requeststate.File{{Path: "in.txt", SHA256: strings.Repeat("c", 64)}},
	}
}

func readPrefix(t *testing.T, st *requeststate.State) []byte {
	t.Helper()
	r, err := st.PrefixReader()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestSealOpen(t *testing.T) {
	s := newSealer(t, "", newKey(t))
	prefix := []byte(`{"trace":2}` + "\n" + strings.Repeat(`{"op":"seed","seed":7}`+"\n", 1000))
	st := newState(prefix)
	token, err := s.Seal(st)
	if err != nil {
		t.Fatal(err)
	}
	if len(token) > 4096 {
		t.Errorf("a compressible 23 KB prefix sealed into %d bytes", len(token))
	}
	got, err := s.Open(token, binding, now)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != st.ID || got.Execution != "exec-1" || got.Question.Rule != "ask" || got.Question.Effect.Function != "sdk.gh.issues_create" ||
		!got.Expiry.Equal(st.Expiry) || len(got.Files) != 1 || got.Files[0].Path != "in.txt" || got.Binding != binding {
		t.Errorf("opened %+v, sealed %+v", got, st)
	}
	if !bytes.Equal(readPrefix(t, got), prefix) {
		t.Error("the prefix did not come back whole")
	}
}

// TestOpenRefuses: every refusal is its own error, and comes before
// anything else.
func TestOpenRefuses(t *testing.T) {
	key := newKey(t)
	seal := func(t *testing.T, mod func(*requeststate.State)) string {
		st := newState([]byte("prefix"))
		if mod != nil {
			mod(st)
		}
		token, err := newSealer(t, "", key).Seal(st)
		if err != nil {
			t.Fatal(err)
		}
		return token
	}
	flip := func(token string, at int) string {
		raw, _ := base64.RawURLEncoding.DecodeString(token)
		raw[at] ^= 1
		return base64.RawURLEncoding.EncodeToString(raw)
	}
	setLength := func(token string, n uint32) string {
		raw, _ := base64.RawURLEncoding.DecodeString(token)
		binary.BigEndian.PutUint32(raw[9:], n)
		return base64.RawURLEncoding.EncodeToString(raw)
	}
	other := func(mod func(*requeststate.Binding)) requeststate.Binding { b := binding; mod(&b); return b }
	for _, tc := range []struct {
		name    string
		token   func(t *testing.T) string
		binding requeststate.Binding
		at      time.Time
		want    error
	}{
		{"tampered body", func(t *testing.T) string { return flip(seal(t, nil), 40) }, binding, now, requeststate.ErrTampered},
		{"tampered nonce", func(t *testing.T) string { return flip(seal(t, nil), 20) }, binding, now, requeststate.ErrTampered},
		{"tampered tag", func(t *testing.T) string {
			tok := seal(t, nil)
			raw, _ := base64.RawURLEncoding.DecodeString(tok)
			return flip(tok, len(raw)-1)
		}, binding, now, requeststate.ErrTampered},
		{"length claims less", func(t *testing.T) string { return setLength(seal(t, nil), 100) }, binding, now, requeststate.ErrTampered},
		// A length that claims more looks as a cut does.
		{"length claims more", func(t *testing.T) string { return setLength(seal(t, nil), 1<<20) }, binding, now, requeststate.ErrTruncated},
		{"truncated", func(t *testing.T) string { tok := seal(t, nil); return tok[:len(tok)-10] }, binding, now, requeststate.ErrTruncated},
		{"truncated by one", func(t *testing.T) string { tok := seal(t, nil); return tok[:len(tok)-1] }, binding, now, requeststate.ErrTruncated},
		{"truncated by two", func(t *testing.T) string { tok := seal(t, nil); return tok[:len(tok)-2] }, binding, now, requeststate.ErrTruncated},
		{"truncated by three", func(t *testing.T) string { tok := seal(t, nil); return tok[:len(tok)-3] }, binding, now, requeststate.ErrTruncated},
		{"truncated to framing", func(t *testing.T) string { return seal(t, nil)[:12] }, binding, now, requeststate.ErrTruncated},
		{"appended", func(t *testing.T) string { return seal(t, nil) + "AAAA" }, binding, now, requeststate.ErrTampered},
		{"not base64", func(t *testing.T) string { return "not a state!" }, binding, now, requeststate.ErrMalformed},
		{"empty", func(t *testing.T) string { return "" }, binding, now, requeststate.ErrTruncated},
		{"other key", func(t *testing.T) string {
			tok, err := newSealer(t, "", newKey(t)).Seal(newState(nil))
			if err != nil {
				t.Fatal(err)
			}
			return tok
		}, binding, now, requeststate.ErrUnknownKey},
		{"expired", func(t *testing.T) string { return seal(t, nil) }, binding, now.Add(10 * time.Minute), requeststate.ErrExpired},
		{"another user", func(t *testing.T) string { return seal(t, nil) }, other(func(b *requeststate.Binding) { b.User = "mallory" }), now, requeststate.ErrOtherUser},
		{"another client", func(t *testing.T) string { return seal(t, nil) }, other(func(b *requeststate.Binding) { b.Client = "other" }), now, requeststate.ErrOtherClient},
		{"another script", func(t *testing.T) string { return seal(t, nil) }, other(func(b *requeststate.Binding) { b.ScriptSHA256 = strings.Repeat("d", 64) }), now, requeststate.ErrOtherScript},
		{"other arguments", func(t *testing.T) string { return seal(t, nil) }, other(func(b *requeststate.Binding) { b.ArgumentsSHA256 = strings.Repeat("e", 64) }), now, requeststate.ErrOtherArgs},
		{"100 MB", func(t *testing.T) string { return strings.Repeat("A", 100<<20) }, binding, now, requeststate.ErrTooLarge},
		{"just past the bound", func(t *testing.T) string { return strings.Repeat("A", requeststate.MaxTokenBytes+1) }, binding, now, requeststate.ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := newSealer(t, "", key).Open(tc.token(t), tc.binding, tc.at)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Open: %v, %v; want %v", st, err, tc.want)
			}
			for _, other := range []error{requeststate.ErrTampered, requeststate.ErrTruncated, requeststate.ErrExpired, requeststate.ErrOtherUser,
				requeststate.ErrOtherClient, requeststate.ErrOtherScript, requeststate.ErrOtherArgs, requeststate.ErrTooLarge,
				requeststate.ErrUnknownKey, requeststate.ErrMalformed, requeststate.ErrSpent} {
				if other != tc.want && errors.Is(err, other) {
					t.Errorf("%v is also %v", err, other)
				}
			}
			if tc.want == requeststate.ErrOtherUser && strings.Contains(err.Error(), "alice") {
				t.Errorf("the error names the state's user: %v", err)
			}
		})
	}
}

func TestOpenOnce(t *testing.T) {
	key := newKey(t)
	s := newSealer(t, "", key)
	token, err := s.Seal(newState(nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Open(token, binding, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Open(token, binding, now.Add(time.Minute)); !errors.Is(err, requeststate.ErrSpent) {
		t.Fatalf("resumed twice: %v", err)
	}
	// A sealer whose Spent is another (another replica) does not know.
	if _, err := newSealer(t, "", key).Open(token, binding, now); err != nil {
		t.Errorf("another process: %v", err)
	}
}

// TestVerifyThenSpend: Verify checks a state as Open does without using
// it up (a retry refused for another reason keeps it); Spend uses it up.
func TestVerifyThenSpend(t *testing.T) {
	s := newSealer(t, "", newKey(t))
	token, err := s.Seal(newState(nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Verify(token, binding, now.Add(10*time.Minute)); !errors.Is(err, requeststate.ErrExpired) {
		t.Fatalf("Verify of an expired state: %v", err)
	}
	for range 2 {
		if _, err := s.Verify(token, binding, now); err != nil {
			t.Fatalf("Verify: %v", err)
		}
	}
	st, err := s.Verify(token, binding, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Spend(st, now); err != nil {
		t.Fatalf("Spend: %v", err)
	}
	if err := s.Spend(st, now); !errors.Is(err, requeststate.ErrSpent) {
		t.Errorf("spent twice: %v", err)
	}
	if _, err := s.Open(token, binding, now); !errors.Is(err, requeststate.ErrSpent) {
		t.Errorf("Open of a spent state: %v", err)
	}
}

func TestRotatedKey(t *testing.T) {
	old, cur := newKey(t), newKey(t)
	token, err := newSealer(t, "", old).Seal(newState(nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newSealer(t, "", cur, old).Open(token, binding, now); err != nil {
		t.Errorf("a sealer that still holds the old key: %v", err)
	}
	if _, err := newSealer(t, "", cur).Open(token, binding, now); !errors.Is(err, requeststate.ErrUnknownKey) || !strings.Contains(err.Error(), cur.ID()) {
		t.Errorf("a sealer without it: %v", err)
	}
}

func TestKeyFrom(t *testing.T) {
	for _, n := range []int{0, 16, 31, 33, 64} {
		if _, err := requeststate.KeyFrom(make([]byte, n)); err == nil {
			t.Errorf("a key of %d bytes was taken", n)
		}
	}
	a, _ := requeststate.KeyFrom(bytes.Repeat([]byte{1}, 32))
	b, _ := requeststate.KeyFrom(bytes.Repeat([]byte{1}, 32))
	if a.ID() != b.ID() || len(a.ID()) != 16 {
		t.Errorf("key ids %q, %q", a.ID(), b.ID())
	}
}

// TestSpill: a prefix past MaxSealedBytes sealed is kept in the spill
// directory, checked when it is read back.
func TestSpill(t *testing.T) {
	prefix := make([]byte, 3<<20) // random: it does not compress
	rand.Read(prefix)
	key := newKey(t)
	if _, err := newSealer(t, "", key).Seal(newState(prefix)); err == nil || !strings.Contains(err.Error(), "no [effects] state_dir keeps it") {
		t.Fatalf("without a spill directory: %v", err)
	}
	dir := t.TempDir()
	s := newSealer(t, dir, key)
	st := newState(prefix)
	token, err := s.Seal(st)
	if err != nil {
		t.Fatal(err)
	}
	if len(token) > 64<<10 || st.Spill == nil {
		t.Fatalf("a spilled state is %d bytes, spill %+v", len(token), st.Spill)
	}
	got, err := s.Open(token, binding, now)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readPrefix(t, got), prefix) {
		t.Fatal("the spilled prefix did not come back whole")
	}
	// A changed spill file is refused.
	path := filepath.Join(dir, st.Spill.Name)
	data, _ := os.ReadFile(path)
	data[100] ^= 1
	os.WriteFile(path, data, 0o600)
	if _, err := got.PrefixReader(); !errors.Is(err, requeststate.ErrPrefixMissing) {
		t.Errorf("a changed spill file: %v", err)
	}
	if err := got.RemoveSpill(); err != nil {
		t.Error(err)
	}
	if _, err := got.PrefixReader(); !errors.Is(err, requeststate.ErrPrefixMissing) {
		t.Errorf("a removed spill file: %v", err)
	}
}

func TestSpentBounded(t *testing.T) {
	s := requeststate.NewSpent(2)
	if err := errors.Join(s.Spend("a", "u1", now.Add(time.Minute), now), s.Spend("b", "u2", now.Add(2*time.Minute), now)); err != nil {
		t.Fatal(err)
	}
	if err := s.Spend("c", "u3", now.Add(time.Minute), now); !errors.Is(err, requeststate.ErrSpentFull) {
		t.Fatalf("a full memory took another: %v", err)
	}
	// Once "a" expires, its place is free, and "b" is still remembered.
	if err := s.Spend("c", "u3", now.Add(3*time.Minute), now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.Spend("b", "u2", now.Add(2*time.Minute), now.Add(time.Minute)); !errors.Is(err, requeststate.ErrSpent) {
		t.Errorf("b: %v", err)
	}
	if s.Len() != 2 {
		t.Errorf("remembers %d", s.Len())
	}
}

// sealedToken is a state sealed under the key of 32 bytes of 7: the one
// token FuzzOpen's opener may accept (a token sealed in the test would
// differ in each fuzzing process: its id and nonce are random).
const sealedToken = "ATA4qese1ePqAAABw-okaTP80QbxegoAtYQmNh6gbknWfvPpNFf_xXHgnLjOGluAe__4PT-ZtXA5bsG9ZCvRvu-0CNNjt-NTGLjhCWpY0kficxUiKBvRwFVjQN5DHYrEJlhuGay5YRZ6VswjbixCIbahDx_2mdDtwXl7ZQ4jhyMAlbajn1fSGbPZeknDOEUuWJlE5IRt45RhppDVEdmTqJqmFvExGICQtAL6RL3irOsJwhMVbQfEn1imF5XyZbTzUObOHid6VwOYWNhy6KmqRMMaxAbN7Dtr9YsbkYL9v7tU8KjKdToP14JzBaQnQt0BSpY602GvOg09tqOwjuZfLTlca8T8acVoHFfd2NP7Mo-a7eoOBSkRRipKZUU_3BiAMURgctPYUnODSjwb8lnsnaNJXT5DYL1a6RpdNuhy05Q601nh2H_LxyrbNmB3WTd8x94fMOrFpOKRjnxzlb8_gzA4Ex_6zcfneEWifldd0mPEl4rvrL6maBCx6vEAO8FHhdQ67XoitejkTqwP_WjBgxIQVsFLDTBxxmjWjEXf9rOr0W2bL7QkBFEPjtm5AucIl4ASb-2xDi0gVYDe9OWIdkb5Ch8hU5qeziT0FrnhcADe1h22HL5lINUrG4M"

// FuzzOpen: Open never panics, and accepts no token but the one sealed.
func FuzzOpen(f *testing.F) {
	key, _ := requeststate.KeyFrom(bytes.Repeat([]byte{7}, 32))
	f.Add(sealedToken)
	f.Add(sealedToken[:len(sealedToken)-1])
	f.Add(sealedToken + "A")
	f.Add("")
	f.Add("AQ")
	f.Fuzz(func(t *testing.T, tok string) {
		opener, _ := requeststate.NewSealer("", requeststate.NewSpent(0), key)
		st, err := opener.Open(tok, binding, now)
		switch {
		case err == nil && tok != sealedToken:
			t.Fatalf("accepted a modified token %q: %+v", tok, st)
		case err != nil && tok == sealedToken:
			t.Fatalf("refused the sealed token: %v", err)
		}
	})
}

// TestSpentBoundsEachUser: one user resuming state after state cannot
// fill the memory every user's resumptions share: past a user's share
// (a sixteenth) that user's next is refused, another user's still
// resumes, and the user's share comes back as their states expire.
func TestSpentBoundsEachUser(t *testing.T) {
	s := requeststate.NewSpent(32) // 2 of one user's
	later := now.Add(time.Minute)
	for _, id := range []string{"m1", "m2"} {
		if err := s.Spend(id, "mallory", later, now); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Spend("m3", "mallory", later, now); !errors.Is(err, requeststate.ErrSpentFull) || !strings.Contains(err.Error(), "of one user") {
		t.Errorf("a user past their share: %v", err)
	}
	if err := s.Spend("a1", "alice", later, now); err != nil {
		t.Errorf("another user, while one is at their share: %v", err)
	}
	if err := s.Spend("m3", "mallory", later.Add(time.Minute), later); err != nil {
		t.Errorf("once the user's states expired: %v", err)
	}
	if err := s.Spend("m1", "mallory", later.Add(time.Minute), later); err != nil {
		t.Errorf("an expired id spent again (its state is expired too): %v", err)
	}
	if err := s.Spend("m4", "mallory", later.Add(time.Minute), later); !errors.Is(err, requeststate.ErrSpentFull) {
		t.Errorf("the user's share, counted again: %v", err)
	}
}
