//go:build !windows

package nativemsg

// checkRegistry cannot read the registry off Windows: nothing to check.
func checkRegistry(loc *Location, force bool) error {
	_, _, err := registryHive(loc.RegistryKey)
	return err
}

// setRegistry tells the caller which value to set on Windows.
func setRegistry(loc *Location) error {
	return &RegistryError{Key: loc.RegistryKey, ManifestPath: loc.ManifestPath}
}

// deleteRegistry tells the caller which key to delete on Windows.
func deleteRegistry(loc *Location) error {
	return &RegistryError{Key: loc.RegistryKey, ManifestPath: loc.ManifestPath, Remove: true}
}
