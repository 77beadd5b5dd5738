package devserver

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/devserver/conversation"
	"github.com/orchestrator-zero/oz0/devserver/store"
	"github.com/orchestrator-zero/oz0/gateway"
	"github.com/orchestrator-zero/oz0/telemetry"
)

// startTelemetry makes the OTLP receiver of the sessions' spans and, when a backend is named
// (oz0 dev --otlp-endpoint, OTEL_EXPORTER_OTLP_ENDPOINT), the exporter of each job's trace.
func (s *Server) startTelemetry() error {
	cfg := s.cfg.Telemetry
	cfg.Getenv, cfg.Log, cfg.Version = s.cfg.Getenv, s.log.With("part", "otlp"), s.cfg.Version
	settings, err := telemetry.Resolve(cfg)
	if err != nil {
		return err
	}
	s.otlpSettings = settings
	if s.otlp, err = telemetry.New(cfg, settings, s.jobRecord); err != nil {
		return err
	}
	if s.otlp != nil {
		s.undo = append(s.undo, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			s.otlp.Close(ctx)
			return nil
		})
	}
	s.spans = &telemetry.Receiver{
		Resolve: func(ctx context.Context, key string) (string, error) {
			g, err := s.keys.Resolve(ctx, key)
			if err != nil {
				return "", err
			}
			return g.Job, nil
		},
		Keep: func(job string, spans [][]byte) error {
			evs := make([]store.NewEvent, len(spans))
			for i, d := range spans {
				evs[i] = store.NewEvent{Type: store.EventSpan, Data: d}
			}
			_, err := s.store.AppendBatch(job, evs)
			return err
		},
		Note: func(job, message string) {
			b, _ := json.Marshal(map[string]string{"level": "warning", "message": message})
			s.store.Append(job, store.EventLog, b)
		},
		Mask: s.secrets.Masker(),
		// A request's body may take the port's body timeout once its turn has come (limits.go).
		BodyTimeout: s.cfg.limits.bodyTimeout,
	}
	if s.otlp != nil {
		s.spans.Forward = s.otlp.Forward
	}
	return nil
}

// jobEnded starts the export of the job's trace, once its end is recorded.
func (s *Server) jobEnded(job string) {
	s.spans.Forget(job)
	s.otlp.JobEnded(job)
}

// jobRecord reads a job's record for its export: its trace and its kept model calls.
func (s *Server) jobRecord(job string) (telemetry.Record, error) {
	var buf bytes.Buffer
	if err := s.store.Trace(job, &buf); err != nil {
		return telemetry.Record{}, err
	}
	calls, err := s.store.Calls(job, 0)
	if err != nil {
		return telemetry.Record{}, err
	}
	var mcs []apiv1.ModelCall
	for _, c := range calls {
		if c.Exchange == nil {
			continue
		}
		var ex gateway.Exchange
		if json.Unmarshal(c.Exchange, &ex) == nil {
			mcs = append(mcs, apiv1.ModelCall{Seq: c.Seq, Conversation: conversation.Of(&ex, s.secrets.Masker())})
		}
	}
	return telemetry.ReadRecord(&buf, mcs)
}

// otlpNote is the banner's line on the export; "" when there is none.
func (s *Server) otlpNote() string {
	st := s.otlpSettings
	switch {
	case st.Enabled:
		content := "prompts and completions not exported (--otlp-content)"
		if st.Content {
			content = "prompts and completions exported too"
		}
		return "each job's trace to " + st.Endpoint + " (" + st.Protocol + "), with its sessions' spans; " + content
	case st.Why != "":
		return "not exported: " + st.Why
	}
	return ""
}
