// Package pox builds and reads the IMS POX messages of LTI 1.1 Basic Outcomes
// (replaceResult, readResult, deleteResult), for the web server's outcomes client and the LMS
// simulator's outcomes service. Standard library only.
//
// It is in internal/, not beside webserver/protocol/lti11, because simulators may import
// only api/ and internal/ and the LMS simulator's outcomes service reads and answers with it.
package pox

import (
	"bytes"
	"encoding/xml"
	"errors"
	"strconv"
	"strings"
)

// Basic Outcomes operations (LTI 1.1 §6, IMS POX).
const (
	OpReplace = "replaceResult"
	OpRead    = "readResult"
	OpDelete  = "deleteResult"
)

// ContentType is the content type of POX requests and answers.
const ContentType = "application/xml"

const poxNS = "http://www.imsglobal.org/services/ltiv1p1/xsd/imsoms_v1p0"

// Outcome is what replaceResult sends: a score in [0, 1] and, optionally, text result
// data (an extension most LMSs accept).
type Outcome struct {
	Score float64
	Text  string
}

// ValidScore reports whether s may be sent as a Basic Outcomes score: a decimal in [0, 1].
func ValidScore(s float64) bool { return s >= 0 && s <= 1 }

// Request is the imsx_POXEnvelopeRequest of op on the result sourcedID; messageID
// must be unique per request. outcome is read only for OpReplace.
func Request(op, messageID, sourcedID string, outcome Outcome) ([]byte, error) {
	var body string
	switch op {
	case OpReplace:
		if !ValidScore(outcome.Score) {
			return nil, errors.New("pox: score outside [0, 1]")
		}
		result := "<resultScore><language>en</language><textString>" +
			strconv.FormatFloat(outcome.Score, 'f', -1, 64) + "</textString></resultScore>"
		if outcome.Text != "" {
			result += "<resultData><text>" + escape(outcome.Text) + "</text></resultData>"
		}
		body = "<result>" + result + "</result>"
	case OpRead, OpDelete:
	default:
		return nil, errors.New("pox: unknown operation " + op)
	}
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>`)
	b.WriteString(`<imsx_POXEnvelopeRequest xmlns="` + poxNS + `"><imsx_POXHeader><imsx_POXRequestHeaderInfo>`)
	b.WriteString(`<imsx_version>V1.0</imsx_version><imsx_messageIdentifier>` + escape(messageID) + `</imsx_messageIdentifier>`)
	b.WriteString(`</imsx_POXRequestHeaderInfo></imsx_POXHeader><imsx_POXBody><` + op + `Request>`)
	b.WriteString(`<resultRecord><sourcedGUID><sourcedId>` + escape(sourcedID) + `</sourcedId></sourcedGUID>` + body + `</resultRecord>`)
	b.WriteString(`</` + op + `Request></imsx_POXBody></imsx_POXEnvelopeRequest>`)
	return b.Bytes(), nil
}

func escape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// Response is what ltiop reads of an LMS's imsx_POXEnvelopeResponse.
type Response struct {
	CodeMajor   string // success, processing, failure or unsupported
	Severity    string
	Description string
	Operation   string // the imsx_operationRefIdentifier
	// Score is the readResult score; HasScore is false when the LMS holds none.
	Score    float64
	HasScore bool
	Text     string
}

// Success reports imsx_codeMajor success.
func (r *Response) Success() bool { return r.CodeMajor == "success" }

type poxEnvelope struct {
	XMLName xml.Name `xml:"imsx_POXEnvelopeResponse"`
	Header  struct {
		Info struct {
			Status struct {
				CodeMajor   string `xml:"imsx_codeMajor"`
				Severity    string `xml:"imsx_severity"`
				Description string `xml:"imsx_description"`
				Operation   string `xml:"imsx_operationRefIdentifier"`
			} `xml:"imsx_statusInfo"`
		} `xml:"imsx_POXResponseHeaderInfo"`
	} `xml:"imsx_POXHeader"`
	Body struct {
		Read struct {
			Score string `xml:"result>resultScore>textString"`
			Text  string `xml:"result>resultData>text"`
		} `xml:"readResultResponse"`
	} `xml:"imsx_POXBody"`
}

// ParseResponse reads an imsx_POXEnvelopeResponse. An answer that is not one, or has no
// imsx_codeMajor, is an error.
func ParseResponse(b []byte) (*Response, error) {
	var env poxEnvelope
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = true
	if err := d.Decode(&env); err != nil {
		return nil, errors.New("pox: the answer is not an imsx_POXEnvelopeResponse")
	}
	st := env.Header.Info.Status
	r := &Response{CodeMajor: strings.TrimSpace(st.CodeMajor), Severity: strings.TrimSpace(st.Severity),
		Description: strings.TrimSpace(st.Description), Operation: strings.TrimSpace(st.Operation),
		Text: strings.TrimSpace(env.Body.Read.Text)}
	if r.CodeMajor == "" {
		return nil, errors.New("pox: the answer has no imsx_codeMajor")
	}
	if s := strings.TrimSpace(env.Body.Read.Score); s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, errors.New("pox: the readResult score is not a number")
		}
		r.Score, r.HasScore = v, true
	}
	return r, nil
}

// RequestInfo is what an outcomes service (the LMS simulator) reads of a request.
type RequestInfo struct {
	Op, MessageID, SourcedID string
	Score                    string // replaceResult's textString, as sent
	Text                     string
}

type poxRequestEnvelope struct {
	XMLName   xml.Name `xml:"imsx_POXEnvelopeRequest"`
	MessageID string   `xml:"imsx_POXHeader>imsx_POXRequestHeaderInfo>imsx_messageIdentifier"`
	Body      struct {
		Ops []struct {
			XMLName   xml.Name
			SourcedID string `xml:"resultRecord>sourcedGUID>sourcedId"`
			Score     string `xml:"resultRecord>result>resultScore>textString"`
			Text      string `xml:"resultRecord>result>resultData>text"`
		} `xml:",any"`
	} `xml:"imsx_POXBody"`
}

// ParseRequest reads an imsx_POXEnvelopeRequest with one operation.
func ParseRequest(b []byte) (*RequestInfo, error) {
	var env poxRequestEnvelope
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = true
	if err := d.Decode(&env); err != nil || len(env.Body.Ops) != 1 {
		return nil, errors.New("pox: not an imsx_POXEnvelopeRequest with one operation")
	}
	op := env.Body.Ops[0]
	name, ok := strings.CutSuffix(op.XMLName.Local, "Request")
	if !ok {
		return nil, errors.New("pox: unknown POX operation")
	}
	return &RequestInfo{Op: name, MessageID: env.MessageID, SourcedID: strings.TrimSpace(op.SourcedID),
		Score: strings.TrimSpace(op.Score), Text: op.Text}, nil
}

// ResponseBody is an imsx_POXEnvelopeResponse (what an outcomes service answers).
// score is written for a successful readResult when hasScore.
func ResponseBody(op, messageID, refID, codeMajor, description string, score string) []byte {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>`)
	b.WriteString(`<imsx_POXEnvelopeResponse xmlns="` + poxNS + `"><imsx_POXHeader><imsx_POXResponseHeaderInfo>`)
	b.WriteString(`<imsx_version>V1.0</imsx_version><imsx_messageIdentifier>` + escape(messageID) + `</imsx_messageIdentifier>`)
	b.WriteString(`<imsx_statusInfo><imsx_codeMajor>` + escape(codeMajor) + `</imsx_codeMajor><imsx_severity>status</imsx_severity>`)
	b.WriteString(`<imsx_description>` + escape(description) + `</imsx_description>`)
	b.WriteString(`<imsx_messageRefIdentifier>` + escape(refID) + `</imsx_messageRefIdentifier>`)
	b.WriteString(`<imsx_operationRefIdentifier>` + escape(op) + `</imsx_operationRefIdentifier></imsx_statusInfo>`)
	b.WriteString(`</imsx_POXResponseHeaderInfo></imsx_POXHeader><imsx_POXBody>`)
	if op == OpRead && codeMajor == "success" {
		b.WriteString(`<readResultResponse><result><resultScore><language>en</language><textString>` + escape(score) +
			`</textString></resultScore></result></readResultResponse>`)
	} else {
		b.WriteString(`<` + escape(op) + `Response/>`)
	}
	b.WriteString(`</imsx_POXBody></imsx_POXEnvelopeResponse>`)
	return b.Bytes()
}
