package fault

import "testing"

// A fault is on only in a build with the tag and only when named; released builds ignore the
// variable.
func TestOnOnlyWithTheTagAndTheName(t *testing.T) {
	t.Setenv(Env, " rtt-halved, loss-one-way ")
	if On(RTTHalved) != Compiled || On(LossOneWay) != Compiled {
		t.Errorf("named faults: On = %v, %v with Compiled %v", On(RTTHalved), On(LossOneWay), Compiled)
	}
	if On(HTTPExtraRoundTrip) {
		t.Error("a fault not named is on")
	}
	if got, want := Value() != "", Compiled; got != want {
		t.Errorf("Value() = %q with Compiled %v", Value(), Compiled)
	}
}
