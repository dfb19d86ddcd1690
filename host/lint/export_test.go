package lint

// HotComment is hotComment for the tests.
type HotComment struct {
	Text   string
	Line   int
	Header bool
}

// HotComments is hotComments for the tests.
func HotComments(src []byte) []HotComment {
	var out []HotComment
	for _, hc := range hotComments(src) {
		out = append(out, HotComment{hc.text, hc.line, hc.header})
	}
	return out
}
