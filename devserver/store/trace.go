package store

import (
	"bufio"
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/orchestrator-zero/oz0/internal/jsonutil"
)

// TraceVersion is the version of the trace format, in its first line.
const TraceVersion = 1

// traceHeader is a trace's first line: {"oz0_trace":1,"job":{…}}. Every other line is an Event,
// {"job":"job_…","seq":1,"time":"…","type":"…","data":…}, in Seq order from 1 with no gap; so
// `jq 'select(.type=="model_call")'` picks events, and the header has no "type".
type traceHeader struct {
	Version int  `json:"oz0_trace"`
	Job     *Job `json:"job"`
}

// Trace writes a job's whole record as JSON lines: the job, then every event. It reads one
// consistent snapshot, so the job line and the events agree even while the job runs. This is
// what `oz0 job trace` prints; LoadTrace reads it back.
func (s *Store) Trace(job string, w io.Writer) error {
	tx, err := s.rdb.BeginTx(s.ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return s.readErr(err)
	}
	defer tx.Rollback()
	j, err := scanJob(tx.QueryRowContext(s.ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = ?`, job))
	if errors.Is(err, errNoRows) {
		return s.notFound(job)
	}
	if err != nil {
		return s.readErr(err)
	}
	var n int64
	if err := tx.QueryRowContext(s.ctx, `SELECT n FROM jobs WHERE id = ?`, job).Scan(&n); err != nil {
		return s.readErr(err)
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := jsonutil.NewEncoder(bw)
	if err := enc.Encode(traceHeader{TraceVersion, &j}); err != nil {
		return err
	}
	var last int64
	buf := make([]Event, 0, replayPage)
	for {
		evs, more, err := s.readEvents(s.ctx, tx, job, n, last, replayPage, maxLiveBytes, buf)
		if err != nil {
			return err
		}
		for _, e := range evs {
			if err := enc.Encode(e); err != nil {
				return err
			}
			last = e.Seq
		}
		if !more {
			break
		}
	}
	return bw.Flush()
}

// LoadTrace reads what Trace wrote: the job and its events. It checks that the first line is a
// trace header and that the events are the job's, in Seq order from 1 without a gap.
func LoadTrace(r io.Reader) (Job, []Event, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var j Job
	var evs []Event
	header := false
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return Job{}, nil, fmt.Errorf("trace line %d: %w", line, err)
		}
		switch {
		case len(bytes.TrimSpace(b)) == 0: // blank lines are fine
		case !header:
			var h traceHeader
			if jerr := json.Unmarshal(b, &h); jerr != nil || h.Job == nil || h.Version == 0 {
				return Job{}, nil, fmt.Errorf("trace line %d: not an oz0 trace header ({\"oz0_trace\":%d,\"job\":{…}})", line, TraceVersion)
			}
			if h.Version > TraceVersion {
				return Job{}, nil, fmt.Errorf("trace line %d: trace format %d is newer than this oz0's (%d); upgrade oz0", line, h.Version, TraceVersion)
			}
			j, header = *h.Job, true
		default:
			var e Event
			if jerr := json.Unmarshal(b, &e); jerr != nil {
				return Job{}, nil, fmt.Errorf("trace line %d: %v", line, jerr)
			}
			if e.Job != j.ID {
				return Job{}, nil, fmt.Errorf("trace line %d: an event of job %q in the trace of %s", line, e.Job, j.ID)
			}
			if want := int64(len(evs) + 1); e.Seq != want {
				return Job{}, nil, fmt.Errorf("trace line %d: seq %d where %d was due", line, e.Seq, want)
			}
			evs = append(evs, e)
		}
		if err == io.EOF {
			if !header {
				return Job{}, nil, errors.New("trace: empty")
			}
			return j, evs, nil
		}
	}
}
