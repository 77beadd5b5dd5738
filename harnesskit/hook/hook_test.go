package hook

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// connect serves impl over go-plugin's in-process gRPC test connection and returns the host's
// Hook.
func connect(t *testing.T, impl Hook) Hook {
	t.Helper()
	client, _ := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{PluginName: &Plugin{Impl: impl}})
	// Close asks the server to shut down, and it stops itself: stopping it here as well raced
	// with that stop inside go-plugin (the race detector caught the two GRPCServer.Stop calls).
	t.Cleanup(func() { client.Close() })
	raw, err := client.Dispense(PluginName)
	if err != nil {
		t.Fatal(err)
	}
	h, ok := raw.(Hook)
	if !ok {
		t.Fatalf("Dispense gave %T", raw)
	}
	return h
}

func TestRoundTrip(t *testing.T) {
	var got Request
	h := connect(t, Func(func(ctx context.Context, req Request) (Decision, error) {
		got = req
		var args struct {
			Team    string `json:"team"`
			Summary string `json:"summary"`
		}
		if err := req.Bind(&args); err != nil {
			return Decision{}, err
		}
		var cfg struct{ Teams []string }
		if err := req.BindConfig(&cfg); err != nil {
			return Decision{}, err
		}
		switch {
		case args.Team == "exec":
			return Deny("the exec team is told by a person"), nil
		case args.Team == "legal":
			return Ask("legal: " + strings.Join(cfg.Teams, ",")), nil
		case args.Summary != "":
			args.Summary = "[redacted]"
			return Change(args, "redacted")
		case args.Team == "billing":
			return Allow("billing is fine"), nil
		}
		return Continue(), nil
	}))
	req := Request{Hook: "h", Job: "job_1", Agent: "triage", Harness: "acme-triage", Tool: "notify_team",
		Name: "acme-triage.notify_team", Config: json.RawMessage(`{"teams":["a","b"]}`)}
	cases := []struct {
		name string
		args string
		want Decision
	}{
		{"deny", `{"team":"exec"}`, Decision{Verdict: VerdictDeny, Reason: "the exec team is told by a person"}},
		{"ask", `{"team":"legal"}`, Decision{Verdict: VerdictAsk, Reason: "legal: a,b"}},
		{"allow", `{"team":"billing"}`, Decision{Verdict: VerdictAllow, Reason: "billing is fine"}},
		{"change", `{"team":"x","summary":"secret"}`, Decision{Verdict: VerdictChange, Reason: "redacted", Arguments: json.RawMessage(`{"team":"x","summary":"[redacted]"}`)}},
		{"continue", `{}`, Decision{Verdict: VerdictContinue}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req.Arguments = json.RawMessage(c.args)
			d, err := h.Decide(context.Background(), req)
			if err != nil {
				t.Fatalf("%s: %v", c.args, err)
			}
			if d.Verdict != c.want.Verdict || d.Reason != c.want.Reason || string(d.Arguments) != string(c.want.Arguments) {
				t.Errorf("%s: got %+v, want %+v", c.args, d, c.want)
			}
		})
	}
	if got.Name != "acme-triage.notify_team" || got.Job != "job_1" || got.Agent != "triage" || got.Hook != "h" || got.Tool != "notify_team" || got.Harness != "acme-triage" {
		t.Errorf("the plugin got %+v", got)
	}
}

func TestErrorsAndPanics(t *testing.T) {
	h := connect(t, Func(func(ctx context.Context, req Request) (Decision, error) {
		switch req.Tool {
		case "error":
			return Decision{}, errors.New("the policy store is down")
		case "status":
			return Decision{}, status.Error(codes.PermissionDenied, "no")
		case "panic":
			panic("boom")
		case "invalid":
			return Decision{Verdict: "perhaps"}, nil
		case "slow":
			<-ctx.Done()
			return Decision{}, ctx.Err()
		}
		return Allow(""), nil
	}))
	try := func(tool string, ctx context.Context) error {
		_, err := h.Decide(ctx, Request{Tool: tool, Arguments: json.RawMessage(`{}`)})
		return err
	}
	if err := try("error", context.Background()); status.Code(err) != codes.Unknown || status.Convert(err).Message() != "the policy store is down" {
		t.Errorf("error: %v", err)
	}
	if err := try("status", context.Background()); status.Code(err) != codes.PermissionDenied {
		t.Errorf("status: %v", err)
	}
	if err := try("panic", context.Background()); status.Code(err) != codes.Internal || status.Convert(err).Message() != "panic: boom" {
		t.Errorf("panic: %v", err)
	}
	if err := try("invalid", context.Background()); status.Code(err) != codes.Internal || !strings.Contains(err.Error(), `decision "perhaps" is not one of allow, deny, ask, change, continue`) {
		t.Errorf("invalid: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := try("slow", ctx); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("slow: %v", err)
	}
	// The plugin still answers after all that.
	if err := try("ok", context.Background()); err != nil {
		t.Errorf("ok: %v", err)
	}
}

// rawServer answers whatever bytes it is given, bypassing the SDK's checks: a plugin that
// answers garbage.
type rawServer struct{ answer []byte }

func (s rawServer) decide(context.Context, *wrapperspb.BytesValue) (*wrapperspb.BytesValue, error) {
	return wrapperspb.Bytes(s.answer), nil
}

func TestGarbageAnswers(t *testing.T) {
	for _, answer := range []string{
		``, `not json`, `[]`, `{"decision":"perhaps"}`, `{"decision":"allow","extra":1}`,
		`{"decision":"change"}`, `{"decision":"change","arguments":[1]}`, `{"decision":"change","arguments":"x"}`,
		`{"decision":"deny","arguments":{}}`, `{"decision":"allow"} {}`, `{"decision":""}`,
	} {
		conn, server := plugin.TestGRPCConn(t, func(s *grpcServer) { s.RegisterService(&serviceDesc, rawServer{answer: []byte(answer)}) })
		_, err := NewClient(conn).Decide(context.Background(), Request{Arguments: json.RawMessage(`{}`)})
		var g *GarbageError
		if !errors.As(err, &g) {
			t.Errorf("%q: %v", answer, err)
		}
		conn.Close()
		server.Stop()
	}
}

func TestParseDecision(t *testing.T) {
	d, err := ParseDecision([]byte(`{"decision":"change","reason":"r","arguments":{ "a" : 1 }}`))
	if err != nil || string(d.Arguments) != `{"a":1}` || d.Reason != "r" {
		t.Errorf("%+v %v", d, err)
	}
	if _, err := ParseDecision([]byte(`{"decision":"deny","reason":"` + strings.Repeat("x", MaxReasonBytes+1) + `"}`)); err == nil {
		t.Error("a long reason passes")
	}
	if _, err := Change(func() {}, ""); err == nil {
		t.Error("Change of a func passes")
	}
	if _, err := Change([]int{1}, ""); err == nil {
		t.Error("Change of a list passes")
	}
}

func TestHandshake(t *testing.T) {
	if Handshake.ProtocolVersion != 1 || Handshake.MagicCookieKey != "OZ0_HOOK_PLUGIN" || Handshake.MagicCookieValue == "" {
		t.Errorf("%+v", Handshake)
	}
}

type grpcServer = grpc.Server
