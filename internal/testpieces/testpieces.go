// Package testpieces owns how fuzz tests cut a message into the pieces a
// stream may deliver it in, so that a scanner fed piece by piece is
// checked at every boundary the fuzzer chooses.
package testpieces

// Cut cuts msg into pieces whose sizes are the bytes of sizes, each plus
// one, in turn (1 to 256 bytes), the last piece what is left; with no
// sizes, msg is one piece. An empty msg has no pieces.
func Cut(msg, sizes []byte) [][]byte {
	var pieces [][]byte
	for i := 0; len(msg) > 0; i++ {
		n := len(msg)
		if len(sizes) > 0 {
			n = min(n, int(sizes[i%len(sizes)])+1)
		}
		pieces = append(pieces, msg[:n])
		msg = msg[n:]
	}
	return pieces
}
