package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// ListModels returns the ids the server lists at GET /v1/models.
func (c *Client) ListModels(ctx context.Context) ([]string, error) {
	cfg := openai.DefaultConfig(c.cfg.APIKey)
	cfg.BaseURL = strings.TrimRight(c.cfg.BaseURL, "/") + "/v1"
	cfg.HTTPClient = auxDoer{c}
	list, err := openai.NewClientWithConfig(cfg).ListModels(ctx)
	if err != nil {
		return nil, fmt.Errorf("list models at %s/v1/models: %s", strings.TrimRight(c.cfg.BaseURL, "/"), c.redact(err.Error()))
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
