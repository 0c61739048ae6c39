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

	openai "github.com/sashabaranov/go-openai"
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

// ListModels returns the ids the server lists at GET /v1/models. Its
// error is a *ModelsError.
func (c *Client) ListModels(ctx context.Context) ([]string, error) {
	cfg := openai.DefaultConfig(c.cfg.APIKey)
	cfg.BaseURL = strings.TrimRight(c.cfg.BaseURL, "/") + "/v1"
	cfg.HTTPClient = c.http
	list, err := openai.NewClientWithConfig(cfg).ListModels(ctx)
	if err != nil {
		me := &ModelsError{URL: redactURL(cfg.BaseURL + "/models"), Msg: c.redact(err.Error()), err: err}
		var ae *openai.APIError
		var re *openai.RequestError
		switch {
		case errors.As(err, &ae):
			me.Status = ae.HTTPStatusCode
		case errors.As(err, &re):
			me.Status = re.HTTPStatusCode
		}
		if me.Status != 0 {
			me.Class = statusClass(me.Status)
		} else {
			me.Class = classify(ctx, err, false)
		}
		return nil, me
	}
	ids := make([]string, 0, len(list.Models))
	for _, m := range list.Models {
		ids = append(ids, m.ID)
	}
	return ids, nil
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
	resp, err := c.http.Do(req)
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

// ModelLimits returns the context length (max_model_len) of each model the
// server lists at GET /v1/models, for the servers that report it (vLLM
// does); a model listed without one is absent from the map.
func (c *Client) ModelLimits(ctx context.Context) (map[string]int, error) {
	base := strings.TrimRight(c.cfg.BaseURL, "/")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/models", nil)
	if err != nil {
		return nil, err
	}
	req.Header = c.header
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, errors.New(c.redact(err.Error()))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, errors.New(c.redact(err.Error()))
	}
	if resp.StatusCode != http.StatusOK {
		return nil, errors.New(c.redact(errorMessage(resp.Status, raw)))
	}
	var list struct {
		Data []struct {
			ID          string `json:"id"`
			MaxModelLen int64  `json:"max_model_len"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("models list: %w", err)
	}
	limits := map[string]int{}
	for _, m := range list.Data {
		if m.MaxModelLen > 0 && m.MaxModelLen <= 1<<40 {
			limits[m.ID] = int(m.MaxModelLen)
		}
	}
	return limits, nil
}
