// Package clientaddr names the client of the hosted mode's connections
// and requests, for every bound kept per client address: the cap on open
// connections (host/serve/hosted) and the bound on failed authentications
// (host/serve/auth). One name for both, so that the bounds count the same
// clients.
//
// A client is its IP address, or for IPv6 its /64 network, which one
// client commonly has whole (so it cannot rotate through its own prefix to
// escape a bound). It is never taken from a header (X-Forwarded-For):
// behind a proxy every connection is the proxy's, and the bounds per
// client should be raised to the totals.
package clientaddr

import (
	"net"
)

// Of names the client of a connection whose peer is addr.
func Of(addr net.Addr) string {
	if a, ok := addr.(*net.TCPAddr); ok {
		return ofIP(a.IP)
	}
	return OfRemote(addr.String())
}

// OfRemote names the client of a request whose peer is remote
// (http.Request.RemoteAddr: host:port).
func OfRemote(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return remote
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return host
	}
	return ofIP(ip)
}

// ofIP names the client at ip: an IPv4 address, or an IPv6 /64.
func ofIP(ip net.IP) string {
	if ip4 := ip.To4(); ip4 != nil {
		return ip4.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}
