package jsonscan

import (
	"encoding/json"
	"testing"
)

func benchDocs() map[string]string {
	escaped, _ := json.Marshal(map[string]any{
		"url":   "https://lms.example.edu/a<b>&c",
		"names": []string{"Zoë", "日本語", "emoji 😀", "quote \" and \\ backslash"},
	})
	return map[string]string{"nrps-1000": sampleDoc(1000), "escaped": string(escaped)}
}

func BenchmarkValid(b *testing.B) {
	for name, doc := range benchDocs() {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			for b.Loop() {
				if !Valid(doc) {
					b.Fatal("invalid")
				}
			}
		})
	}
}

func BenchmarkEncodingJSONValid(b *testing.B) {
	for name, doc := range benchDocs() {
		raw := []byte(doc)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if !json.Valid(raw) {
					b.Fatal("invalid")
				}
			}
		})
	}
}

func BenchmarkScannerWalk(b *testing.B) {
	doc := sampleDoc(1000)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	var sc Scanner
	for b.Loop() {
		sc.Reset(doc)
		walkStrings(&sc)
		if sc.End() != nil {
			b.Fatal(sc.Err())
		}
	}
}
