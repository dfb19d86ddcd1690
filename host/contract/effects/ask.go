package effects

// Asking a person. A rule whose action is ask (host/contract/policy)
// pauses an effect before it happens and puts a Question to a person
// through the surface the execution came from: a terminal prompt under
// `toolscript run`, an elicitation in an MCP client (in the call, or as
// an input_required result and a retry), or nobody (kind approval). The
// surface gives the Run its Asker; Decide calls it and waits.

// Question is what a person is asked about one effect: the effect as the
// dry run shows it (its texts already passed the redactor) and the rule
// that asked.
type Question struct {
	Effect Effect `json:"effect"`
	Rule   string `json:"rule"`
}

// Answer is a person's answer to a Question.
type Answer int

// The answers.
const (
	// Decline: the effect does not happen; the script gets an error of
	// kind denied, which it may catch.
	Decline Answer = iota
	// Approve: the effect happens.
	Approve
	// ApproveAll: the effect happens, and so does every later effect of
	// the execution the same rule asks about ("yes to all like this").
	ApproveAll
	// Cancel: the effect does not happen and the script stops.
	Cancel
)

func (a Answer) String() string {
	switch a {
	case Approve:
		return "approve"
	case ApproveAll:
		return "approve all"
	case Cancel:
		return "cancel"
	}
	return "decline"
}

// Asker puts a Question to a person and waits for the Answer. An error
// says nobody could be asked (a client that can ask no one, the wait's
// own bound passed): the execution stops with kind approval, the
// effect not made. Ask is called from the goroutine of the host call
// that made the effect, and may block for as long as the person takes.
type Asker interface {
	Ask(q Question) (Answer, error)
}
