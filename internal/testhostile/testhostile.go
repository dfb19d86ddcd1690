// Package testhostile owns what the hosted server's hostile-connection
// tests (host/serve/hosted and the end-to-end suite) share: reading, many
// at a time, what the server did with each of thousands of connections.
package testhostile

import (
	"net"
	"sync"
	"time"
)

// readers is how many connections Outcomes reads at once.
const readers = 32

// Outcomes reads what the server did with each connection by deadline,
// with read: how many times read returned each outcome, and the errors it
// returned (a connection neither answered nor closed, say).
func Outcomes(conns []net.Conn, deadline time.Time, read func(net.Conn, time.Time) (string, error)) (outcomes map[string]int, failures []string) {
	var mu sync.Mutex
	outcomes = map[string]int{}
	jobs := make(chan net.Conn)
	var wg sync.WaitGroup
	for range readers {
		wg.Go(func() {
			for conn := range jobs {
				outcome, err := read(conn, deadline)
				mu.Lock()
				if err != nil {
					failures = append(failures, err.Error())
				} else {
					outcomes[outcome]++
				}
				mu.Unlock()
			}
		})
	}
	for _, conn := range conns {
		jobs <- conn
	}
	close(jobs)
	wg.Wait()
	return outcomes, failures
}
