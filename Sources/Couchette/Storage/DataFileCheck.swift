import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Checks `data.mdb` with plain reads before LMDB maps it, so that a damaged file gives
/// `.corruption` instead of killing the process.
///
/// LMDB trusts its file: a page past the end of a truncated file is read through the memory map
/// and raises SIGBUS, and a meta page with a page size of 0 divides by zero. So the two meta pages
/// are parsed here (layout of LMDB 0.9's `MDB_page` header and `MDB_meta` on 64-bit machines) and
/// the file must hold every page up to the newest meta's `mm_last_pg`.
///
/// Almost: LMDB does not write pages that a transaction allocated and freed again ("loose" pages),
/// so a healthy file can end a few pages before `mm_last_pg`. Those pages are free — LMDB never
/// reads a free page, it writes it before use — so when the file is short, the free-page B-tree
/// (LMDB's `FREE_DBI`) is walked with plain reads too, and the file is accepted only when every
/// missing page is on it.
///
/// An empty file is accepted: LMDB writes fresh meta pages into it, as it does on first open.
enum DataFileCheck {
    /// What the check needs from an LMDB meta page.
    struct Meta: Equatable {
        let pageSize: Int
        let lastPage: UInt64
        let transactionID: UInt64
        let freeRoot: UInt64
        let mainRoot: UInt64

        /// The bytes a file needs to hold every page up to `lastPage`.
        var requiredSize: Int? {
            let (pages, overflow) = Int(exactly: lastPage)?.addingReportingOverflow(1) ?? (0, true)
            guard !overflow else { return nil }
            let (bytes, tooLarge) = pages.multipliedReportingOverflow(by: pageSize)
            return tooLarge ? nil : bytes
        }
    }

    private static let metaFlag: UInt16 = 0x08
    private static let branchFlag: UInt16 = 0x01
    private static let leafFlag: UInt16 = 0x02
    private static let bigDataFlag: UInt16 = 0x01
    private static let magic: UInt32 = 0xBEEF_C0DE
    private static let dataVersion: UInt32 = 1
    private static let invalidPage = UInt64.max
    private static let headerSize = 16
    /// Page header + meta up to and including `mm_txnid`.
    private static let metaSize = 152

    /// Throws `.corruption` naming the problem when `folder/data.mdb` would crash LMDB; returns
    /// whether the file holds a database (false when it is missing or empty).
    @discardableResult
    static func verify(folder: String) throws -> Bool {
        let path = folder + "/data.mdb"
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        if descriptor < 0 {
            if errno == ENOENT { return false }
            throw CouchetteError(.io, "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        let file = DataFile(descriptor: descriptor, path: path)
        // Another process may be committing meanwhile: a verdict on a file that changed under
        // the check is not trusted, the check runs again.
        for attempt in 1...5 {
            let size = try file.size()
            guard size > 0 else { return false }
            var checked: Meta?
            do {
                try check(file, size: size, reading: &checked)
                return true
            } catch let error as CouchetteError where error.code == .corruption {
                let after = try? newestMeta(file, size: file.size())
                if attempt == 5 || checked == nil || checked == after { throw error }
            }
            usleep(2_000)
        }
        return true
    }

    /// The newest meta of `folder/data.mdb`, or nil for a missing or empty file.
    static func newestMeta(folder: String) throws -> Meta? {
        let descriptor = open(folder + "/data.mdb", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        let file = DataFile(descriptor: descriptor, path: folder + "/data.mdb")
        let size = try file.size()
        return size == 0 ? nil : try newestMeta(file, size: size)
    }

    /// Checks a file of `size` bytes (more than 0); `newest` is its newest meta page once read.
    private static func check(_ file: DataFile, size: Int, reading newest: inout Meta?) throws {
        let meta = try newestMeta(file, size: size)
        newest = meta
        guard let required = meta.requiredSize else {
            throw file.corrupt("its meta page claims \(meta.lastPage) pages")
        }
        if size < required {
            try checkMissingPagesAreFree(file, meta: meta, size: size)
        }
    }

    private static func newestMeta(_ file: DataFile, size: Int) throws -> Meta {
        let first = try readMeta(file, at: 0, size: size)
        let second = try readMeta(file, at: first.pageSize, size: size)
        guard second.pageSize == first.pageSize else {
            throw file.corrupt("its meta pages disagree on the page size (\(first.pageSize), \(second.pageSize))")
        }
        return second.transactionID > first.transactionID ? second : first  // as LMDB picks
    }

    private static func readMeta(_ file: DataFile, at offset: Int, size: Int) throws -> Meta {
        guard size >= offset + metaSize else {
            throw file.corrupt("it has \(size) bytes, too few for LMDB's two meta pages")
        }
        let page = try file.read(metaSize, at: offset)
        guard page.uint16(at: 10) & metaFlag != 0, page.uint32(at: 16) == magic else {
            throw file.corrupt("the page at offset \(offset) is not an LMDB meta page")
        }
        guard page.uint32(at: 20) == dataVersion else {
            throw file.corrupt("LMDB data format \(page.uint32(at: 20)) is not \(dataVersion)")
        }
        let pageSize = Int(page.uint32(at: 40))
        guard (512...65536).contains(pageSize), pageSize & (pageSize - 1) == 0 else {
            throw file.corrupt("its meta page gives a page size of \(pageSize)")
        }
        let meta = Meta(
            pageSize: pageSize, lastPage: page.uint64(at: 136), transactionID: page.uint64(at: 144),
            freeRoot: page.uint64(at: 80), mainRoot: page.uint64(at: 128))
        for root in [meta.freeRoot, meta.mainRoot] where root != invalidPage && (root < 2 || root > meta.lastPage) {
            throw file.corrupt("a root page (\(root)) lies outside the database's \(meta.lastPage + 1) pages")
        }
        guard meta.lastPage >= 1 else { throw file.corrupt("its meta page claims no pages") }
        return meta
    }

    /// Accepts a file that ends before `meta.lastPage` only when every missing page is free.
    private static func checkMissingPagesAreFree(_ file: DataFile, meta: Meta, size: Int) throws {
        let present = UInt64(size / meta.pageSize)  // a partial last page counts as missing
        let truncated = file.corrupt("it is truncated: \(size) bytes, but its pages reach \(meta.requiredSize ?? 0)")
        // A healthy file misses at most the pages one transaction allocated and freed again.
        guard meta.lastPage - present < 1 << 20, meta.freeRoot != invalidPage else { throw truncated }
        var missing = Set(present...meta.lastPage)
        var walker = FreeListWalker(file: file, pageSize: meta.pageSize, presentPages: present)
        try walker.visit(meta.freeRoot, depth: 0) { page in missing.remove(page) }
        guard missing.isEmpty else { throw truncated }
    }

    /// Reads LMDB's free-page B-tree (keys: transaction ids; values: `count, page, page, …`).
    private struct FreeListWalker {
        let file: DataFile
        let pageSize: Int
        let presentPages: UInt64
        var visited = 0

        mutating func visit(_ number: UInt64, depth: Int, _ free: (UInt64) -> Void) throws {
            visited += 1
            guard depth < 32, UInt64(visited) <= presentPages else { throw file.corrupt("its free-page tree loops") }
            let page = try read(number, pages: 1)
            let flags = page.uint16(at: 10)
            let lower = Int(page.uint16(at: 12))
            guard lower >= headerSize, lower <= pageSize else { throw file.corrupt("page \(number) has a bad header") }
            let nodes = (lower - headerSize) / 2
            for index in 0..<nodes {
                let node = Int(page.uint16(at: headerSize + 2 * index))
                guard node + 8 <= pageSize else { throw file.corrupt("page \(number) has a node outside it") }
                let low = UInt64(page.uint16(at: node)), high = UInt64(page.uint16(at: node + 2))
                let nodeFlags = page.uint16(at: node + 4), keySize = Int(page.uint16(at: node + 6))
                if flags & branchFlag != 0 {
                    try visit(low | high << 16 | UInt64(nodeFlags) << 32, depth: depth + 1, free)
                } else if flags & leafFlag != 0 {
                    let dataSize = Int(low | high << 16)
                    let dataOffset = node + 8 + keySize
                    let list: [UInt8]
                    if nodeFlags & bigDataFlag != 0 {
                        guard dataOffset + 8 <= pageSize else { throw file.corrupt("page \(number) has a node outside it") }
                        let overflow = page.uint64(at: dataOffset)
                        let pages = (headerSize + dataSize + pageSize - 1) / pageSize
                        list = Array(try read(overflow, pages: pages)[headerSize..<(headerSize + dataSize)])
                    } else {
                        guard dataOffset + dataSize <= pageSize else { throw file.corrupt("page \(number) has a node outside it") }
                        list = Array(page[dataOffset..<(dataOffset + dataSize)])
                    }
                    guard list.count >= 8 else { throw file.corrupt("page \(number) has a malformed free list") }
                    let count = list.uint64(at: 0)
                    guard count <= UInt64(list.count / 8 - 1) else { throw file.corrupt("page \(number) has a malformed free list") }
                    for entry in 0..<Int(count) { free(list.uint64(at: 8 + 8 * entry)) }
                } else {
                    throw file.corrupt("page \(number) of the free-page tree is neither branch nor leaf")
                }
            }
        }

        private func read(_ number: UInt64, pages: Int) throws -> [UInt8] {
            guard number >= 2, number < presentPages, UInt64(pages) <= presentPages - number else {
                throw file.corrupt("it is truncated: page \(number) of its free-page tree is missing")
            }
            return try file.read(pages * pageSize, at: Int(number) * pageSize)
        }
    }

    /// `data.mdb` opened for plain reads.
    private struct DataFile {
        let descriptor: Int32
        let path: String

        func size() throws -> Int {
            var status = stat()
            guard fstat(descriptor, &status) == 0 else {
                throw CouchetteError(.io, "cannot read \(path): \(String(cString: strerror(errno)))")
            }
            return Int(status.st_size)
        }

        func read(_ count: Int, at offset: Int) throws -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: count)
            let got = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, count, off_t(offset)) }
            guard got == count else { throw corrupt("it ends inside the page at offset \(offset)") }
            return bytes
        }

        func corrupt(_ problem: String) -> CouchetteError {
            CouchetteError(.corruption, "\(path) is damaged: \(problem)")
        }
    }
}

extension Array where Element == UInt8 {
    fileprivate func uint16(at offset: Int) -> UInt16 { UInt16(self[offset]) | UInt16(self[offset + 1]) << 8 }
    fileprivate func uint32(at offset: Int) -> UInt32 { UInt32(uint16(at: offset)) | UInt32(uint16(at: offset + 2)) << 16 }
    fileprivate func uint64(at offset: Int) -> UInt64 { UInt64(uint32(at: offset)) | UInt64(uint32(at: offset + 4)) << 32 }
}
