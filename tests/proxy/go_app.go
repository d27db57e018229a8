// The upstream contract (README.md) with Go's net/http (standard library
// only):  go build -o DIR/go_app tests/proxy/go_app.go && DIR/go_app PORT
package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

const pattern = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
const piece = 64 * 1024

// Byte i of a /size body is pattern[i % 62]: a piece that starts at offset
// off is block[off % 62:][:len].
var block = []byte(strings.Repeat(pattern, piece/len(pattern)+2))

func reply(w http.ResponseWriter, code int, body, ctype string) {
	w.Header().Set("Content-Type", ctype)
	if code == 204 || code == 304 {
		w.WriteHeader(code)
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	io.WriteString(w, body)
}

func size(w http.ResponseWriter, r *http.Request) {
	if r.Method != "GET" && r.Method != "HEAD" {
		reply(w, 405, "method not allowed\n", "text/plain")
		return
	}
	q := r.URL.Query()
	n, err1 := strconv.ParseInt(strings.TrimPrefix(r.URL.Path, "/size/"), 10, 64)
	d, err2 := strconv.Atoi(q.Get("delay_ms"))
	if q.Get("delay_ms") == "" {
		d, err2 = 0, nil
	}
	if err1 != nil || err2 != nil || n < 0 || d < 0 {
		reply(w, 400, "bad size\n", "text/plain")
		return
	}
	time.Sleep(time.Duration(d) * time.Millisecond)
	w.Header().Set("Content-Type", "application/octet-stream")
	chunked := q.Get("chunked") == "1"
	if !chunked {
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
	}
	w.WriteHeader(200)
	f := w.(http.Flusher)
	if chunked {
		f.Flush() // head out without a length: chunked from here on
	}
	for off := int64(0); off < n; {
		k := n - off
		if k > int64(piece) {
			k = int64(piece) // (no min builtin: Debian's Go 1.19 builds this too)
		}
		start := off % int64(len(pattern))
		if _, err := w.Write(block[start : start+k]); err != nil {
			return
		}
		off += k
		if chunked {
			f.Flush() // one chunk per piece
		}
	}
}

func sum(w http.ResponseWriter, r *http.Request) {
	if r.Method != "POST" && r.Method != "PUT" {
		reply(w, 405, "method not allowed\n", "text/plain")
		return
	}
	h := sha256.New()
	count, err := io.Copy(h, r.Body)
	if err != nil {
		reply(w, 400, "bad body\n", "text/plain")
		return
	}
	reply(w, 200, fmt.Sprintf("%x %d\n", h.Sum(nil), count), "text/plain")
}

func echo(w http.ResponseWriter, r *http.Request) {
	bodyLen, _ := io.Copy(io.Discard, r.Body)
	// net/http keeps fields in a map: their order is lost.  Sorted by name,
	// a repeated field's values in the order received; Host and
	// Transfer-Encoding, which net/http takes out of the map, put back.
	headers := [][2]string{{"host", r.Host}}
	for _, te := range r.TransferEncoding {
		headers = append(headers, [2]string{"transfer-encoding", te})
	}
	for name, values := range r.Header {
		for _, v := range values {
			headers = append(headers, [2]string{strings.ToLower(name), v})
		}
	}
	sort.SliceStable(headers, func(i, j int) bool { return headers[i][0] < headers[j][0] })
	doc := struct {
		Method  string      `json:"method"`
		Path    string      `json:"path"`
		Headers [][2]string `json:"headers"`
		BodyLen int64       `json:"body_len"`
	}{r.Method, r.RequestURI, headers, bodyLen}
	var b strings.Builder
	enc := json.NewEncoder(&b) // compact, ends with "\n"
	enc.SetEscapeHTML(false)
	enc.Encode(doc)
	reply(w, 200, b.String(), "application/json")
}

func status(w http.ResponseWriter, r *http.Request) {
	code, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/status/"))
	if err != nil || code < 200 || code > 599 {
		reply(w, 400, "bad status\n", "text/plain")
		return
	}
	reply(w, code, fmt.Sprintf("status %d\n", code), "text/plain")
}

func handle(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/size/"):
		size(w, r)
	case p == "/sha256":
		sum(w, r)
	case p == "/echo" || strings.HasPrefix(p, "/echo/"):
		echo(w, r)
	case strings.HasPrefix(p, "/status/"):
		status(w, r)
	case p == "/set-cookie":
		w.Header().Add("Set-Cookie", "a=1; Path=/")
		w.Header().Add("Set-Cookie", "b=2; Path=/; HttpOnly")
		reply(w, 200, "two cookies\n", "text/plain")
	default:
		reply(w, 404, "not found\n", "text/plain")
	}
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go_app PORT")
		os.Exit(2)
	}
	// A plain HandlerFunc, not ServeMux: the mux would redirect paths such
	// as /echo/../x instead of letting /echo see the raw target.
	err := http.ListenAndServe("127.0.0.1:"+os.Args[1], http.HandlerFunc(handle))
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
