// Command wineprng writes bcryptprimitives.dll for Wine 8 (Debian 12's
// wine64), which lacks it, so that Go programs for Windows can start under
// Wine: since Go 1.24 the runtime refuses to start without ProcessPrng
// from bcryptprimitives.dll. The DLL holds no code: its one export,
// ProcessPrng, forwards to advapi32's SystemFunction036 (RtlGenRandom),
// whose arguments (buffer, length) and BOOLEAN result are those the
// runtime and crypto/rand use.
//
//	go run ./internal/cmd/wineprng "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll"
//
// CI uses it before running the Windows test binaries under Wine; nothing
// of it is shipped.
package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
)

const (
	fileAlign    = 0x200
	sectionAlign = 0x1000
	exportRVA    = 0x1000 // the one section: the export directory
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: wineprng OUTPUT.dll")
		os.Exit(2)
	}
	if err := os.WriteFile(os.Args[1], forwarderDLL("bcryptprimitives.dll", "ProcessPrng", "advapi32.SystemFunction036"), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "wineprng:", err)
		os.Exit(1)
	}
}

// forwarderDLL returns a PE32+ (x86-64) DLL named dllName whose export
// name is forwarded to target ("module.Function").
func forwarderDLL(dllName, name, target string) []byte {
	// The export section: directory, tables, then strings.
	var edata bytes.Buffer
	const dirSize = 40
	eat := exportRVA + dirSize // address table: 1 entry
	names := eat + 4           // name pointers: 1 entry
	ords := names + 4          // ordinals: 1 entry (2 bytes)
	str := ords + 2
	dllNameRVA := str
	nameRVA := dllNameRVA + len(dllName) + 1
	targetRVA := nameRVA + len(name) + 1
	end := targetRVA + len(target) + 1
	le := binary.LittleEndian
	w := func(v any) { binary.Write(&edata, le, v) }
	w(uint32(0))          // Characteristics
	w(uint32(0))          // TimeDateStamp
	w(uint16(0))          // MajorVersion
	w(uint16(0))          // MinorVersion
	w(uint32(dllNameRVA)) // Name
	w(uint32(1))          // Base
	w(uint32(1))          // NumberOfFunctions
	w(uint32(1))          // NumberOfNames
	w(uint32(eat))        // AddressOfFunctions
	w(uint32(names))      // AddressOfNames
	w(uint32(ords))       // AddressOfNameOrdinals
	// An address inside the export directory's range is a forwarder.
	w(uint32(targetRVA))
	w(uint32(nameRVA))
	w(uint16(0))
	for _, s := range []string{dllName, name, target} {
		edata.WriteString(s)
		edata.WriteByte(0)
	}
	exportSize := end - exportRVA
	raw := align(edata.Len(), fileAlign)

	var img bytes.Buffer
	p := func(v any) { binary.Write(&img, le, v) }
	// DOS header: "MZ" and e_lfanew at 0x3c.
	dos := make([]byte, 0x40)
	copy(dos, "MZ")
	le.PutUint32(dos[0x3c:], 0x40)
	img.Write(dos)
	img.WriteString("PE\x00\x00")
	// COFF header.
	p(uint16(0x8664)) // AMD64
	p(uint16(1))      // sections
	p(uint32(0))      // TimeDateStamp
	p(uint32(0))      // PointerToSymbolTable
	p(uint32(0))      // NumberOfSymbols
	p(uint16(240))    // SizeOfOptionalHeader (PE32+)
	p(uint16(0x2022)) // EXECUTABLE_IMAGE | LARGE_ADDRESS_AWARE | DLL
	// Optional header, PE32+.
	p(uint16(0x20b))
	p(uint8(14))
	p(uint8(0))
	p(uint32(0))                                            // SizeOfCode
	p(uint32(raw))                                          // SizeOfInitializedData
	p(uint32(0))                                            // SizeOfUninitializedData
	p(uint32(0))                                            // AddressOfEntryPoint: no DllMain
	p(uint32(exportRVA))                                    // BaseOfCode
	p(uint64(0x180000000))                                  // ImageBase
	p(uint32(sectionAlign))                                 // SectionAlignment
	p(uint32(fileAlign))                                    // FileAlignment
	p(uint16(6))                                            // MajorOperatingSystemVersion
	p(uint16(0))                                            //
	p(uint16(0))                                            // MajorImageVersion
	p(uint16(0))                                            //
	p(uint16(6))                                            // MajorSubsystemVersion
	p(uint16(0))                                            //
	p(uint32(0))                                            // Win32VersionValue
	p(uint32(exportRVA + align(edata.Len(), sectionAlign))) // SizeOfImage
	p(uint32(fileAlign))                                    // SizeOfHeaders
	p(uint32(0))                                            // CheckSum
	p(uint16(3))                                            // Subsystem: console
	p(uint16(0x0100))                                       // DllCharacteristics: NX_COMPAT
	p(uint64(0x100000))                                     // SizeOfStackReserve
	p(uint64(0x1000))                                       // SizeOfStackCommit
	p(uint64(0x100000))                                     // SizeOfHeapReserve
	p(uint64(0x1000))                                       // SizeOfHeapCommit
	p(uint32(0))                                            // LoaderFlags
	p(uint32(16))                                           // NumberOfRvaAndSizes
	p(uint32(exportRVA))                                    // export directory
	p(uint32(exportSize))
	for range 15 {
		p(uint64(0))
	}
	// Section header.
	var sname [8]byte
	copy(sname[:], ".edata")
	img.Write(sname[:])
	p(uint32(edata.Len())) // VirtualSize
	p(uint32(exportRVA))   // VirtualAddress
	p(uint32(raw))         // SizeOfRawData
	p(uint32(fileAlign))   // PointerToRawData
	p(uint32(0))           // PointerToRelocations
	p(uint32(0))           // PointerToLinenumbers
	p(uint16(0))           // NumberOfRelocations
	p(uint16(0))           // NumberOfLinenumbers
	p(uint32(0x40000040))  // INITIALIZED_DATA | MEM_READ
	img.Write(make([]byte, fileAlign-img.Len()))
	img.Write(edata.Bytes())
	img.Write(make([]byte, raw-edata.Len()))
	return img.Bytes()
}

func align(n, a int) int { return (n + a - 1) / a * a }
