package requeststate

import "time"

// SpillName is the name a state of user, expiring at expiry, with id,
// gives its spilled prefix.
func SpillName(user string, expiry time.Time, id string) string {
	return spillName(&State{ID: id, Binding: Binding{User: user}, Expiry: expiry})
}
