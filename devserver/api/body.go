package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/orchestrator-zero/oz0/api/apiv1"
)

// Request bodies. A call that takes a body reads it whole, up to a limit of its own: a larger one
// is answered 413 naming the limit (before a byte is read when its length is declared). Under
// BodyDeadline, a body that does not come in time is answered 408.

// BodyDeadline gives every request's body timeout to arrive, from the request's start: a read
// deadline on its connection, which net/http lifts once the body has been read to its end. A
// request without a body gets none, so an answer of any length (a live stream) is not limited.
func BodyDeadline(timeout time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			if http.NewResponseController(w).SetReadDeadline(time.Now().Add(timeout)) == nil {
				r = r.WithContext(context.WithValue(r.Context(), bodyTimeoutKey{}, timeout))
			}
		}
		next.ServeHTTP(w, r)
	})
}

type bodyTimeoutKey struct{}

// decodeBody decodes r's body, at most limit bytes, into v: what names the body for the
// message. With emptyOK, an empty body decodes to nothing. A body that is too large, late or not
// JSON is answered, and ok is false.
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any, what string, emptyOK bool) (ok bool) {
	tooLarge := func() {
		w.Header().Set("Connection", "close")
		writeError(w, http.StatusRequestEntityTooLarge, apiv1.CodeTooLarge, fmt.Sprintf("the request body is larger than %s, the most %s %s takes", size(limit), r.Method, r.URL.Path))
	}
	if r.ContentLength > limit {
		tooLarge()
		return false
	}
	err := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit)).Decode(v)
	var mb *http.MaxBytesError
	switch {
	case err == nil, err == io.EOF && emptyOK:
		return true
	case errors.As(err, &mb):
		tooLarge()
	case errors.Is(err, os.ErrDeadlineExceeded):
		w.Header().Set("Connection", "close")
		within := ""
		if d, ok := r.Context().Value(bodyTimeoutKey{}).(time.Duration); ok {
			within = " within " + d.String()
		}
		writeError(w, http.StatusRequestTimeout, apiv1.CodeTimeout, "the request body did not come"+within+"; a client sends the whole body at once")
	default:
		writeError(w, http.StatusBadRequest, apiv1.CodeBadRequest, "the request is not "+what+": "+err.Error())
	}
	return false
}

// size says a number of bytes in KiB or MiB when it is a whole number of them.
func size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// repeatedHeader returns a header the guard reads that comes more than once, and how many times:
// Authorization, or any Oz0 header (X-Oz0-CSRF and those to come). With two, which one a check
// reads and which one the rest of the way reads could differ.
func repeatedHeader(h http.Header) (string, int) {
	for k, vs := range h {
		if len(vs) < 2 {
			continue
		}
		lk := strings.ToLower(k)
		if lk == "authorization" || strings.HasPrefix(lk, "oz0-") || strings.HasPrefix(lk, "x-oz0-") {
			return k, len(vs)
		}
	}
	return "", 0
}
