package hook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The handshake: a host and a plugin must agree on all three, or the plugin does not start.
// MagicCookieKey is set in the plugin's environment by the host; a binary run by hand without it
// says that it is a plugin and exits.
const (
	ProtocolVersion  = 1
	MagicCookieKey   = "OZ0_HOOK_PLUGIN"
	MagicCookieValue = "c0e1c5b2-oz0-hook-plugin-v1"
)

// Handshake is go-plugin's handshake config of oz0 hook plugins.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   MagicCookieKey,
	MagicCookieValue: MagicCookieValue,
}

// PluginName is the name under which a plugin serves its hook (go-plugin's plugin set key).
const PluginName = "hook"

// The gRPC service, written without generated code: requests and answers are
// google.protobuf.BytesValue holding JSON.
const (
	ServiceName  = "oz0.hook.v1.Hook"
	DecideMethod = "/" + ServiceName + "/Decide"
)

// MaxMessageBytes bounds a request or an answer on the wire (a call's arguments may be up to
// 8 MiB in the harness protocol).
const MaxMessageBytes = 16 << 20

// decider is the server side of the service.
type decider interface {
	decide(ctx context.Context, in *wrapperspb.BytesValue) (*wrapperspb.BytesValue, error)
}

// serviceDesc describes oz0.hook.v1.Hook for grpc.Server.RegisterService, in place of the code
// protoc would generate.
var serviceDesc = grpc.ServiceDesc{
	ServiceName: ServiceName,
	HandlerType: (*decider)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Decide",
		Handler:    decideHandler,
	}},
	Metadata: "oz0/hook/v1/hook.proto",
}

func decideHandler(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
	in := new(wrapperspb.BytesValue)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(decider).decide(ctx, in)
	}
	info := &grpc.UnaryServerInfo{Server: srv, FullMethod: DecideMethod}
	return interceptor(ctx, in, info, func(ctx context.Context, req any) (any, error) {
		return srv.(decider).decide(ctx, req.(*wrapperspb.BytesValue))
	})
}

// server adapts a Hook to the service.
type server struct {
	impl    Hook
	restore func() // run before each call (Serve: puts the real stderr back)
}

func (s server) decide(ctx context.Context, in *wrapperspb.BytesValue) (out *wrapperspb.BytesValue, err error) {
	if s.restore != nil {
		s.restore()
	}
	var req Request
	if err := json.Unmarshal(in.GetValue(), &req); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "the request is not JSON: %v", err)
	}
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "hook %s: panic: %v\n%s", req.Hook, r, debug.Stack())
			out, err = nil, status.Errorf(codes.Internal, "panic: %v", r)
		}
	}()
	d, err := s.impl.Decide(ctx, req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return nil, status.FromContextError(err).Err()
		}
		if _, ok := status.FromError(err); ok && status.Code(err) != codes.Unknown {
			return nil, err
		}
		return nil, status.Error(codes.Unknown, err.Error())
	}
	if err := d.Validate(); err != nil {
		return nil, status.Errorf(codes.Internal, "the hook's decision is invalid: %v", err)
	}
	data, err := json.Marshal(d)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "the hook's decision cannot be encoded: %v", err)
	}
	return wrapperspb.Bytes(data), nil
}

// Plugin is the go-plugin plugin of a hook: on the plugin side Impl is served; on the host side
// Dispense(PluginName) gives a Hook whose Decide calls the plugin (and returns an error for an
// answer that is not a valid Decision). Hosts use Plugin{} (no Impl).
type Plugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl Hook

	restore func()
}

var _ plugin.GRPCPlugin = (*Plugin)(nil)

// GRPCServer registers the service with Impl.
func (p *Plugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Impl == nil {
		return fmt.Errorf("hook: Plugin.Impl is nil")
	}
	s.RegisterService(&serviceDesc, server{impl: p.Impl, restore: p.restore})
	return nil
}

// GRPCClient returns a Hook that calls the plugin over conn.
func (p *Plugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return &Client{conn: conn}, nil
}

// Client is the host's side of the service: a Hook that calls a plugin.
type Client struct{ conn grpc.ClientConnInterface }

// NewClient returns a Client over conn (go-plugin's Dispense gives one already).
func NewClient(conn grpc.ClientConnInterface) *Client { return &Client{conn: conn} }

// Decide sends req to the plugin and returns its decision. The error is the gRPC status of a
// failed call, or a *GarbageError when the plugin's answer is not a valid Decision.
func (c *Client) Decide(ctx context.Context, req Request) (Decision, error) {
	data, err := json.Marshal(req)
	if err != nil {
		return Decision{}, fmt.Errorf("hook: the request cannot be encoded: %w", err)
	}
	out := new(wrapperspb.BytesValue)
	if err := c.conn.Invoke(ctx, DecideMethod, wrapperspb.Bytes(data), out,
		grpc.MaxCallRecvMsgSize(MaxMessageBytes), grpc.MaxCallSendMsgSize(MaxMessageBytes)); err != nil {
		return Decision{}, err
	}
	d, err := ParseDecision(out.GetValue())
	if err != nil {
		return Decision{}, &GarbageError{Answer: clip(string(out.GetValue())), Err: err}
	}
	return d, nil
}

// GarbageError is a plugin's answer that is not a valid Decision.
type GarbageError struct {
	Answer string // the answer, clipped
	Err    error
}

func (e *GarbageError) Error() string { return e.Err.Error() }
func (e *GarbageError) Unwrap() error { return e.Err }
