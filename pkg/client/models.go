package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// ModelsError is a failed GET /v1/models.
type ModelsError struct {
	URL string
	// Status is the HTTP status of the answer, 0 when none arrived; Class
	// is the error class (connect: nothing answered).
	Status int
	Class  string
	Msg    string // never holds the API key
	err    error
}

// Unwrap returns the underlying error (for errors.As; its text may hold
// the API key: print Error instead).
func (e *ModelsError) Unwrap() error { return e.err }

// Error implements error.
func (e *ModelsError) Error() string { return fmt.Sprintf("list models at %s: %s", e.URL, e.Msg) }

// NoEndpoint reports whether the server answered that it has no model list
// (404, 405 or 501): a server that only serves generations.
func (e *ModelsError) NoEndpoint() bool {
	return e.Status == http.StatusNotFound || e.Status == http.StatusMethodNotAllowed || e.Status == http.StatusNotImplemented
}

// redactURL hides a password in u.
func redactURL(u string) string {
	if p, err := url.Parse(u); err == nil {
		return p.Redacted()
	}
	return u
}

// ModelInfo is one model the server lists at GET /v1/models.
type ModelInfo struct {
	ID string
	// MaxModelLen is the model's context length in tokens (vLLM lists
	// it), 0 when the server does not say.
	MaxModelLen int
}

// maxModelsList bounds the model list read from a server.
const maxModelsList = 16 << 20

// ListModels returns the models the server lists at GET /v1/models, with
// their context length where the server reports it. Its error is a
// *ModelsError.
func (c *Client) ListModels(ctx context.Context) ([]ModelInfo, error) {
	u := strings.TrimRight(c.cfg.BaseURL, "/") + "/v1/models"
	fail := func(status int, class string, err error) error {
		return &ModelsError{URL: redactURL(u), Status: status, Class: class, Msg: c.redact(err.Error()), err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fail(0, record.ErrProtocol, err)
	}
	req.Header = c.header
	resp, err := auxDoer{c}.Do(req)
	if err != nil {
		return nil, fail(0, classify(ctx, err, false), err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxModelsList+1))
	switch {
	case err != nil:
		return nil, fail(resp.StatusCode, classify(ctx, err, true), err)
	case resp.StatusCode != http.StatusOK:
		return nil, fail(resp.StatusCode, statusClass(resp.StatusCode), errors.New(errorMessage(resp.Status, raw)))
	case len(raw) > maxModelsList:
		return nil, fail(resp.StatusCode, record.ErrProtocol, fmt.Errorf("the list is longer than %d MiB", maxModelsList>>20))
	}
	var list struct {
		Data []struct {
			ID          string `json:"id"`
			MaxModelLen int64  `json:"max_model_len"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fail(resp.StatusCode, record.ErrProtocol, fmt.Errorf("not an OpenAI model list: %w", err))
	}
	models := make([]ModelInfo, 0, len(list.Data))
	for _, m := range list.Data {
		mi := ModelInfo{ID: m.ID}
		if m.MaxModelLen > 0 && m.MaxModelLen <= 1<<40 {
			mi.MaxModelLen = int(m.MaxModelLen)
		}
		models = append(models, mi)
	}
	return models, nil
}

// Tokenize asks the server's /tokenize endpoint (vLLM) how many tokens text
// is for model. It returns an error when the server has no such endpoint.
func (c *Client) Tokenize(ctx context.Context, model, text string) (int, error) {
	body, _ := json.Marshal(map[string]any{"model": model, "prompt": text, "add_special_tokens": false})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.cfg.BaseURL, "/")+"/tokenize", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header = c.header
	resp, err := auxDoer{c}.Do(req)
	if err != nil {
		return 0, errors.New(c.redact(err.Error()))
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if resp.StatusCode != http.StatusOK {
		return 0, errors.New(c.redact(errorMessage(resp.Status, raw)))
	}
	var out struct {
		Count  *int  `json:"count"`
		Tokens []int `json:"tokens"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return 0, fmt.Errorf("tokenize: %w", err)
	}
	if out.Count != nil {
		return *out.Count, nil
	}
	return len(out.Tokens), nil
}
