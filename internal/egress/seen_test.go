package egress

import (
	"strings"
	"testing"
)

func TestSeenAddress(t *testing.T) {
	for body, want := range map[string]string{
		"10.77.0.11\n":                        "10.77.0.11",
		"  2001:db8::1 ":                      "2001:db8::1",
		"::ffff:10.0.0.1":                     "10.0.0.1",
		`{"origin": "203.0.113.9"}`:           "203.0.113.9",
		`{"ip":"198.51.100.7"}`:               "198.51.100.7",
		`{"ip":"1.2.3.4","origin":"5.6.7.8"}`: "",
		"ok\n":                                "",
		"fe80::1%eth0":                        "",
		"10.0.0.1 and more":                   "",
		"":                                    "",
		strings.Repeat(" ", 300) + "1.2.3.4":  "",
	} {
		var p prefix
		for _, chunk := range []string{body[:len(body)/2], body[len(body)/2:]} {
			if _, err := p.Write([]byte(chunk)); err != nil {
				t.Fatal(err)
			}
		}
		if got := seenAddress(p.whole()); got != want {
			t.Errorf("%q: seen %q, want %q", body, got, want)
		}
	}
}

// A destination that does not parse is shown without anything that may be credentials.
func TestCheckHidesCredentials(t *testing.T) {
	for _, raw := range []string{"https://user:p/ss@host/", "https://u:pa ss@h/", "https://u:p#w@h/", "https://u:s3cret@h:99999/"} {
		err := Check(raw)
		if err == nil || strings.ContainsAny(err.Error(), "\n") {
			t.Fatalf("%s: %v, want one line", raw, err)
		}
		for _, secret := range []string{"p/ss", "pa ss", "p#w", "s3cret", "user", "u:"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("%s: %v shows %q", raw, err, secret)
			}
		}
	}
}
