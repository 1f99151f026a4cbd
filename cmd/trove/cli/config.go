package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/trovehq/trove/internal/atomicfile"
)

// cliConfig is what trove login saves.
type cliConfig struct {
	URL    string `json:"url"`
	APIKey string `json:"api_key"`
}

// configPath is $XDG_CONFIG_HOME/trove/config.json (os.UserConfigDir).
func configPath() (string, error) {
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("finding the config directory: %w", err)
	}
	return filepath.Join(d, "trove", "config.json"), nil
}

// loadConfig reads the login config; a missing file is an empty config.
func loadConfig() (*cliConfig, string, error) {
	path, err := configPath()
	if err != nil {
		return &cliConfig{}, "", nil // no home: nothing saved
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &cliConfig{}, path, nil
	}
	if err != nil {
		return nil, path, fmt.Errorf("reading %s: %w", path, err)
	}
	var c cliConfig
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, path, fmt.Errorf("%s is not valid JSON (%v): fix it, or delete it and run trove login again", path, err)
	}
	return &c, path, nil
}

// saveConfig writes c to the login config with mode 0600 (its directory
// 0700) and returns its path.
func saveConfig(c *cliConfig) (string, error) {
	path, err := configPath()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return "", err
	}
	return path, atomicfile.WriteFile(path, append(b, '\n'), 0o600)
}
