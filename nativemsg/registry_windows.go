//go:build windows

package nativemsg

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/sys/windows/registry"
)

// openHive returns the root key and sub-path of loc.RegistryKey.
func openHive(loc *Location) (registry.Key, string, error) {
	hive, path, err := registryHive(loc.RegistryKey)
	if err != nil {
		return 0, "", err
	}
	if hive == "HKLM" {
		return registry.LOCAL_MACHINE, path, nil
	}
	return registry.CURRENT_USER, path, nil
}

// checkRegistry returns a *RegistryConflictError when loc.RegistryKey
// exists and its default value names another manifest, unless force.
func checkRegistry(loc *Location, force bool) error {
	root, path, err := openHive(loc)
	if err != nil {
		return err
	}
	k, err := registry.OpenKey(root, path, registry.QUERY_VALUE)
	if errors.Is(err, registry.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("nativemsg: reading registry key %s: %w", loc.RegistryKey, err)
	}
	defer k.Close()
	val, _, err := k.GetStringValue("")
	switch {
	case errors.Is(err, registry.ErrNotExist):
		return nil // a key with no default value points nowhere
	case errors.Is(err, registry.ErrUnexpectedType):
		val = "(a value that is not a string)"
	case err != nil:
		return fmt.Errorf("nativemsg: reading registry key %s: %w", loc.RegistryKey, err)
	case val == "" || samePath(val, loc.ManifestPath):
		return nil
	}
	if force {
		return nil
	}
	return &RegistryConflictError{Key: loc.RegistryKey, Existing: val, Want: loc.ManifestPath}
}

// setRegistry sets the default value of loc.RegistryKey to
// loc.ManifestPath, creating the key.
func setRegistry(loc *Location) error {
	root, path, err := openHive(loc)
	if err != nil {
		return err
	}
	k, _, err := registry.CreateKey(root, path, registry.SET_VALUE)
	if err != nil {
		return fmt.Errorf("nativemsg: creating registry key %s: %w", loc.RegistryKey, err)
	}
	defer k.Close()
	if err := k.SetStringValue("", loc.ManifestPath); err != nil {
		return fmt.Errorf("nativemsg: setting registry key %s: %w", loc.RegistryKey, err)
	}
	return nil
}

// deleteRegistry deletes loc.RegistryKey; an absent key is not an error.
// The key has no subkeys (DeleteKey would refuse one that has).
func deleteRegistry(loc *Location) error {
	root, path, err := openHive(loc)
	if err != nil {
		return err
	}
	if err := registry.DeleteKey(root, path); err != nil && !errors.Is(err, registry.ErrNotExist) {
		return fmt.Errorf("nativemsg: deleting registry key %s: %w", loc.RegistryKey, err)
	}
	return nil
}

// samePath reports whether a registry value names the manifest path:
// Windows paths are compared without regard to case or redundant
// separators.
func samePath(value, manifest string) bool {
	return strings.EqualFold(filepath.Clean(value), filepath.Clean(manifest))
}
