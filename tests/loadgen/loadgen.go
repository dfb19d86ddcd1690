// Package loadgen drives an HTTP server with many concurrent clients, for
// tests and benchmarks of the hosted mode: N clients share a total number
// of operations, and the report gives latency percentiles, throughput and
// errors. A run is bounded in count and in time, and reaches loopback
// addresses only: the target must be one, and every connection is checked
// when it is dialled.
//
// What an operation is belongs to the caller (one POST, or an MCP
// tools/call after a per-client initialize): Config.NewClient prepares a
// client once, untimed, and returns the Op it repeats.
package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The bounds of a run.
const (
	MaxClients     = 1024
	MaxTotal       = 10_000_000
	MaxDuration    = 30 * time.Minute
	DefaultTimeout = time.Minute
	// maxErrorTexts bounds the distinct error texts a report keeps.
	maxErrorTexts = 20
)

// Config configures a run.
type Config struct {
	// Target is the server's base URL, on a loopback address. When empty,
	// Handler is served on a loopback listener for the run.
	Target  string
	Handler http.Handler
	// Clients is how many clients run at once (1 to MaxClients).
	Clients int
	// Total is how many operations run in all (1 to MaxTotal).
	Total int
	// Timeout ends the run even if operations are left (at most
	// MaxDuration; default DefaultTimeout). Operations it cuts short count
	// as failed, and Report.TimedOut says so.
	Timeout time.Duration
	// NewClient prepares client c (once, before the clock starts) and
	// returns the operation c repeats. Required.
	NewClient func(ctx context.Context, c *Client) (Op, error)
}

// Client is one of a run's clients.
type Client struct {
	// ID numbers the clients from 0.
	ID int
	// BaseURL is the target's base URL.
	BaseURL string
	// HTTP reaches loopback addresses only; the clients share its
	// connections.
	HTTP *http.Client
}

// Op runs one operation; seq numbers the run's operations from 0. An
// error counts it as failed.
type Op func(ctx context.Context, seq int) error

// Report is what a run measured.
type Report struct {
	Clients int
	// Operations is how many ran (Total unless the run timed out).
	Operations int
	Failed     int
	// Errors counts the failures by error text (the first maxErrorTexts
	// texts; the rest under "other").
	Errors   map[string]int
	TimedOut bool
	Elapsed  time.Duration
	// PerSecond is successful operations per second of Elapsed.
	PerSecond float64
	// Latencies of the successful operations.
	Min, P50, P90, P99, Max time.Duration
}

func (r Report) String() string {
	return fmt.Sprintf("%d operations by %d clients in %s: %.0f/s, %d failed; latency min %s, p50 %s, p90 %s, p99 %s, max %s",
		r.Operations, r.Clients, r.Elapsed.Round(time.Millisecond), r.PerSecond, r.Failed,
		r.Min, r.P50, r.P90, r.P99, r.Max)
}

// Run runs the load and reports it. Its error is for a run that could not
// start (bad config, a client that could not be prepared); failed
// operations are in the report.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if err := cfg.check(); err != nil {
		return Report{}, err
	}
	base := cfg.Target
	if base == "" {
		srv := httptest.NewServer(cfg.Handler) // on 127.0.0.1 (or [::1])
		defer srv.Close()
		base = srv.URL
	}
	transport := loopbackTransport(cfg.Clients)
	defer transport.CloseIdleConnections()
	hc := &http.Client{Transport: transport}

	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	ops := make([]Op, cfg.Clients)
	for i := range ops {
		op, err := cfg.NewClient(ctx, &Client{ID: i, BaseURL: base, HTTP: hc})
		if err != nil {
			return Report{}, fmt.Errorf("loadgen: preparing client %d: %w", i, err)
		}
		ops[i] = op
	}

	var next atomic.Int64
	latencies := make([][]time.Duration, cfg.Clients)
	errs := make([][]error, cfg.Clients)
	var wg sync.WaitGroup
	start := time.Now()
	for i, op := range ops {
		wg.Go(func() {
			for ctx.Err() == nil {
				seq := int(next.Add(1) - 1)
				if seq >= cfg.Total {
					return
				}
				t0 := time.Now()
				if err := op(ctx, seq); err != nil {
					errs[i] = append(errs[i], err)
					continue
				}
				latencies[i] = append(latencies[i], time.Since(t0))
			}
		})
	}
	wg.Wait()
	return report(cfg, time.Since(start), latencies, errs), nil
}

func (cfg Config) check() error {
	switch {
	case cfg.Clients < 1 || cfg.Clients > MaxClients:
		return fmt.Errorf("loadgen: %d clients: want 1 to %d", cfg.Clients, MaxClients)
	case cfg.Total < 1 || cfg.Total > MaxTotal:
		return fmt.Errorf("loadgen: %d operations: want 1 to %d", cfg.Total, MaxTotal)
	case cfg.Timeout < 0 || cfg.Timeout > MaxDuration:
		return fmt.Errorf("loadgen: timeout %s: want at most %s", cfg.Timeout, MaxDuration)
	case cfg.NewClient == nil:
		return errors.New("loadgen: no NewClient")
	case cfg.Target == "" && cfg.Handler == nil:
		return errors.New("loadgen: no Target and no Handler")
	case cfg.Target != "":
		u, err := url.Parse(cfg.Target)
		if err != nil {
			return fmt.Errorf("loadgen: target: %w", err)
		}
		if !isLoopbackHost(u.Hostname()) {
			return fmt.Errorf("loadgen: target %s is not a loopback address", cfg.Target)
		}
	}
	return nil
}

func report(cfg Config, elapsed time.Duration, latencies [][]time.Duration, errs [][]error) Report {
	r := Report{Clients: cfg.Clients, Elapsed: elapsed, Errors: map[string]int{}}
	all := slices.Concat(latencies...)
	slices.Sort(all)
	for _, list := range errs {
		for _, err := range list {
			r.Failed++
			text := err.Error()
			if _, seen := r.Errors[text]; !seen && len(r.Errors) >= maxErrorTexts {
				text = "other"
			}
			r.Errors[text]++
		}
	}
	r.Operations = len(all) + r.Failed
	r.TimedOut = r.Operations < cfg.Total
	if elapsed > 0 {
		r.PerSecond = float64(len(all)) / elapsed.Seconds()
	}
	if len(all) > 0 {
		r.Min, r.Max = all[0], all[len(all)-1]
		r.P50, r.P90, r.P99 = percentile(all, 50), percentile(all, 90), percentile(all, 99)
	}
	return r
}

// percentile returns the p-th percentile of sorted (nearest rank).
func percentile(sorted []time.Duration, p int) time.Duration {
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 * n)
	return sorted[max(rank, 1)-1]
}

// loopbackTransport is an HTTP transport that dials loopback addresses
// only (checked on the address actually dialled, after name resolution
// and redirects), keeping one idle connection per client.
func loopbackTransport(clients int) *http.Transport {
	dialer := &net.Dialer{
		Timeout: 10 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return err
			}
			if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
				return fmt.Errorf("loadgen: %s is not a loopback address", address)
			}
			return nil
		},
	}
	return &http.Transport{
		DialContext:         dialer.DialContext,
		MaxIdleConns:        clients,
		MaxIdleConnsPerHost: clients,
		IdleConnTimeout:     30 * time.Second,
	}
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Request returns an Op that sends one request built by build and checks
// the response with check (nil: any 2xx status). The body is read whole
// and closed, so that the connection is reused.
func Request(c *Client, build func(ctx context.Context, seq int) (*http.Request, error),
	check func(resp *http.Response, body []byte) error) Op {
	return func(ctx context.Context, seq int) error {
		req, err := build(ctx, seq)
		if err != nil {
			return err
		}
		resp, err := c.HTTP.Do(req)
		if err != nil {
			return err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if check != nil {
			return check(resp, body)
		}
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			return fmt.Errorf("HTTP status %d", resp.StatusCode)
		}
		return nil
	}
}
