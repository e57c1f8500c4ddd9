package client

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// parseCapabilitiesBefore is ParseCapabilities as it was when it decoded every path item and
// operation: the oracle for the one that decodes only items mentioning the marker.
func parseCapabilitiesBefore(doc []byte) (Capabilities, error) {
	var d struct {
		Info struct {
			BridgeID json.RawMessage `json:"x-sandscope-bridge-id"`
		} `json:"info"`
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return Capabilities{}, fmt.Errorf("OpenAPI document: %w", err)
	}
	// a bridge ID that is not a well-formed string is no ID (the document is still read)
	var id string
	_ = json.Unmarshal(d.Info.BridgeID, &id)
	caps := Capabilities{Dialect: DialectUnknown, BridgeID: validBridgeID(id)}
	has := func(p string) bool { _, ok := d.Paths[p]; return ok }
	switch {
	case has("/v1/sandbox/{id}/processes") || has("/v1/sandbox/{id}/terminals/{terminalId}/connect"):
		caps.Dialect = DialectPreview
	case has("/v1/sandbox/{id}/exec") || has("/v1/sandbox/{id}/pty") || has("/v1/sandbox/{id}/session"):
		caps.Dialect = DialectStable
	}
	for path, item := range d.Paths {
		if !extensionMarked(item) {
			continue
		}
		caps.Extensions = append(caps.Extensions, path)
		if listOperation(item) && safeListPath(path) {
			// more than one announced (none of sandscope's bridges does): the lowest, so the
			// choice does not depend on map order
			if caps.ListPath == "" || path < caps.ListPath {
				caps.ListPath = path
			}
		} else {
			caps.Local = true
		}
	}
	sort.Strings(caps.Extensions)
	return caps, nil
}

// largeOpenAPI is a document of n path items, a few of them marked, each with operations deep
// enough to cost something to decode.
func largeOpenAPI(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"openapi":"3.1.0","info":{"title":"t","version":"1","x-sandscope-bridge-id":"bridge-0123456789"},"paths":{"/v1/sandbox/{id}/processes":{}`)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `,"/v1/thing%d/{id}":{"parameters":[{"name":"id","in":"path"}],"get":{"operationId":"get%d","responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"array","items":{"type":"integer"}}}}}}}}}}`, i, i)
		switch i % 97 {
		case 3:
			fmt.Fprintf(&b, `,"/v1/x-%d":{"post":{"operationId":"x%d","x-sandscope-extension":true}}`, i, i)
		case 5:
			fmt.Fprintf(&b, `,"/v1/y-%d":{"x-sandscope\u002dextension":true,"get":{"operationId":"listSandboxes","x-sandscope-extension":true}}`, i)
		case 7:
			fmt.Fprintf(&b, `,"/v1/z-%d":{"get":{"description":"mentions x-sandscope-extension","x-sandscope-extension":false}}`, i)
		}
	}
	b.WriteString(`}}`)
	return []byte(b.String())
}

// ParseCapabilities answers as when it decoded the whole document: the real documents, a large
// one, escaped markers, items that are not objects, and broken documents.
func TestParseCapabilitiesMatchesWholeDecode(t *testing.T) {
	docs := map[string][]byte{"large": largeOpenAPI(3000)}
	for _, f := range []string{"../localbridge/openapi-v1-preview.json", "../localbridge/openapi-stable.json"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs[f] = b
	}
	for i, s := range []string{
		`{"paths":{"/v1/sandbox/{id}/exec":{"x-sandscope-extension":true}}}`,
		`{"paths":{"/v1/a":{"get":{"x-sandscope\u002dextension":true}}}}`,
		`{"paths":{"/v1/a":{"x-sandscope-extension":"true"}}}`,
		`{"paths":{"/v1/a":{"x-sandscope-extension":null},"/v1/b":null}}`,
		`{"paths":{"/v1/a":{"get":[{"x-sandscope-extension":true}]}}}`,
		`{"paths":{"/v1/a":{"x-sandscope-extension":false,"x-sandscope-extension":true}}}`,
		`{"paths":{"/v1/a":{"get":{"operationId":"listSandboxes","x-sandscope-extension":true}},"/v1/a":{}}}`,
		`{"paths":{"/v1/a":[]}}`, `{"paths":{"/v1/a":"x-sandscope-extension"}}`, `{"paths":{"/v1/a":1}}`,
		`{"paths":{"/v1/a":true,"/v1/b":{"x-sandscope-extension":true}}}`,
		`{"paths":[]}`, `{"paths":null}`, `{"info":[]}`, `{"info":{"x-sandscope-bridge-id":"abcdefghij"}}`,
		`{"paths":{"/v1/a":{}}`, `[]`, `null`, ``, `{"paths":{"/v1/a":{"x":1}}} x`,
	} {
		docs[fmt.Sprint("case ", i)] = []byte(s)
	}
	for name, doc := range docs {
		got, gerr := ParseCapabilities(doc)
		want, werr := parseCapabilitiesBefore(doc)
		if (gerr != nil) != (werr != nil) || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v (%v), want %+v (%v)", name, got, gerr, want, werr)
		}
	}
	if caps, _ := ParseCapabilities(docs["large"]); len(caps.Extensions) < 60 || caps.ListPath == "" || !caps.Local {
		t.Fatalf("large document: %+v", caps)
	}
}

func BenchmarkParseCapabilities(b *testing.B) {
	doc, err := os.ReadFile("../localbridge/openapi-v1-preview.json")
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range []struct {
		name  string
		parse func([]byte) (Capabilities, error)
	}{{"raw items", ParseCapabilities}, {"whole decode", parseCapabilitiesBefore}} {
		b.Run(f.name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := f.parse(doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
