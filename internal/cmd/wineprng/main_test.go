package main

import (
	"bytes"
	"debug/pe"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestForwarderDLL parses the DLL as a PE reader does and follows its
// export directory to the one forwarded export. (That Wine loads it and Go
// starts with it is shown by CI's Wine run, which needs it.)
func TestForwarderDLL(t *testing.T) {
	img := forwarderDLL("bcryptprimitives.dll", "ProcessPrng", "advapi32.SystemFunction036")
	f, err := pe.NewFile(bytes.NewReader(img))
	require.NoError(t, err)
	assert.Equal(t, uint16(pe.IMAGE_FILE_MACHINE_AMD64), f.Machine)
	assert.NotZero(t, f.Characteristics&pe.IMAGE_FILE_DLL)
	oh, ok := f.OptionalHeader.(*pe.OptionalHeader64)
	require.True(t, ok, "PE32+")
	dir := oh.DataDirectory[pe.IMAGE_DIRECTORY_ENTRY_EXPORT]
	require.Len(t, f.Sections, 1)
	sec := f.Sections[0]
	data, err := sec.Data()
	require.NoError(t, err)
	at := func(rva uint32) []byte { return data[rva-sec.VirtualAddress:] }
	cstr := func(rva uint32) string { b := at(rva); return string(b[:bytes.IndexByte(b, 0)]) }
	le := binary.LittleEndian

	exp := at(dir.VirtualAddress)
	assert.Equal(t, "bcryptprimitives.dll", cstr(le.Uint32(exp[12:])))
	require.Equal(t, uint32(1), le.Uint32(exp[20:]), "one function")
	require.Equal(t, uint32(1), le.Uint32(exp[24:]), "one name")
	names, funcs, ords := le.Uint32(exp[32:]), le.Uint32(exp[28:]), le.Uint32(exp[36:])
	assert.Equal(t, "ProcessPrng", cstr(le.Uint32(at(names))))
	ord := le.Uint16(at(ords))
	target := le.Uint32(at(funcs + 4*uint32(ord)))
	assert.True(t, target >= dir.VirtualAddress && target < dir.VirtualAddress+dir.Size,
		"the address lies inside the export directory: a forwarder")
	assert.Equal(t, "advapi32.SystemFunction036", cstr(target))
	assert.Zero(t, oh.AddressOfEntryPoint, "no code")
}
