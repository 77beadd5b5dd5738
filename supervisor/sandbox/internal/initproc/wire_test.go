package initproc

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// The config crosses the control socket as JSON: every field the node sets arrives as it was,
// and an optional step stays optional.
func TestConfigRoundTrip(t *testing.T) {
	exit := uint32(7 << 8)
	for _, tc := range []struct {
		name string
		v, z any // the value, and a pointer to a zero one to decode into
	}{
		{name: "config", v: Config{
			Argv: []string{"/usr/bin/python3", "-m", "acme"}, Env: []string{"PATH=/usr/bin"}, Dir: "/work",
			Root: "/tmp/box", Net: true, Listen: []string{"127.0.0.1:7011", "[::1]:7011"}, UID: 65534, GID: 65534,
			Ops: []Op{
				{Kind: OpSymlink, Src: "usr/bin", Dst: "/bin"},
				{Kind: OpRO, Src: "/usr", Dst: "/usr", Optional: true},
				{Kind: OpRW, Src: "/tmp/work", Dst: "/work"},
				{Kind: OpDevfs, Dst: "/dev"},
				{Kind: OpDevice, Src: "/dev/null", Dst: "/dev/null"},
				{Kind: OpTmpfs, Dst: "/tmp"},
				{Kind: OpHide, Dst: "/plugin/.oz0"},
				{Kind: OpProc, Dst: "/proc"},
			},
		}, z: &Config{}},
		{name: "probe", v: Config{Root: "/tmp/box", Ops: []Op{}, UID: -1, GID: -1, Probe: true}, z: &Config{}},
		{name: "ready", v: Reply{Ready: true, PID: 2}, z: &Reply{}},
		{name: "exec denied", v: Reply{Error: "permission denied", Exec: true, Denied: true}, z: &Reply{}},
		{name: "exit", v: Reply{Exit: &exit}, z: &Reply{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) > MaxMessage {
				t.Fatalf("%d bytes, over MaxMessage", len(b))
			}
			if err := json.Unmarshal(b, tc.z); err != nil {
				t.Fatal(err)
			}
			if got := reflect.ValueOf(tc.z).Elem().Interface(); !reflect.DeepEqual(got, tc.v) {
				t.Errorf("read back %+v\nwant %+v\n(%s)", got, tc.v, b)
			}
		})
	}
}

// A step is a few bytes on the wire: a session's config holds dozens of them.
func TestOpIsShortOnTheWire(t *testing.T) {
	b, _ := json.Marshal(Op{Kind: OpRO, Src: "/usr", Dst: "/usr", Optional: true})
	if want := `{"k":"ro","s":"/usr","d":"/usr","o":true}`; string(b) != want {
		t.Errorf("%s, want %s", b, want)
	}
	b, _ = json.Marshal(Op{Kind: OpTmpfs, Dst: "/tmp"})
	if strings.Contains(string(b), `"s"`) || strings.Contains(string(b), `"o"`) {
		t.Errorf("%s: an empty source and a required step are left out", b)
	}
}
