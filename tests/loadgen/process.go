package loadgen

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Process is a snapshot of what this process holds, to check that a load
// leaves nothing behind: compare one taken before with one taken after.
type Process struct {
	Goroutines int
	// OpenFiles counts the file descriptors (-1 where /proc is missing).
	OpenFiles int
	// RSS is the resident set size in bytes (-1 where /proc is missing).
	RSS int64
}

// Snapshot returns what this process holds now.
func Snapshot() Process {
	p := Process{Goroutines: runtime.NumGoroutine(), OpenFiles: -1, RSS: -1}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		p.OpenFiles = len(fds) - 1 // less the directory being read
	}
	if rss, err := residentBytes(); err == nil {
		p.RSS = rss
	}
	return p
}

func residentBytes() (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("VmRSS %q: %w", rest, err)
		}
		return kb << 10, nil
	}
	return 0, errors.New("no VmRSS in /proc/self/status")
}

// SlowHeaders is a slow-loris client: it connects to addr (a loopback
// host:port) and sends a request's headers one byte every interval, never
// finishing them, until the server closes the connection or ctx ends. It
// returns how long the server kept the connection, or ctx's error.
func SlowHeaders(ctx context.Context, addr string, interval time.Duration) (time.Duration, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, fmt.Errorf("loadgen: %w", err)
	}
	if !isLoopbackHost(host) {
		return 0, fmt.Errorf("loadgen: %s is not a loopback address", addr)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, fmt.Errorf("loadgen: %w", err)
	}
	defer conn.Close()
	start := time.Now()
	closed := make(chan struct{})
	go func() {
		// The server closing the connection ends this read.
		var buf [512]byte
		for {
			if _, err := conn.Read(buf[:]); err != nil {
				close(closed)
				return
			}
		}
	}()
	request := "GET / HTTP/1.1\r\nHost: " + addr + "\r\nX-Slow: " + strings.Repeat("a", 1<<20)
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for i := 0; ; i = (i + 1) % len(request) {
		select {
		case <-closed:
			return time.Since(start), nil
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-ticker.C:
		}
		if _, err := conn.Write([]byte{request[i]}); err != nil {
			select {
			case <-closed:
				return time.Since(start), nil
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}
	}
}
