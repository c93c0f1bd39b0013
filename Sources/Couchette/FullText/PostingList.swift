/// The postings of one term (or phrase) across documents, in document order: for each document
/// its number (the document's sequence), its length in terms (for ranking) and the positions
/// where the term occurs, in order.
///
/// A position is `field << 24 | word offset`: the index's expressions are fields, and a phrase or
/// NEAR never reaches from one field into the next.
struct PostingList {
    var documents: [UInt64] = []
    var lengths: [UInt32] = []
    /// Positions of document `i`: `positions[positionEnds[i - 1] ..< positionEnds[i]]` (from 0 for `i == 0`).
    var positionEnds: [Int] = []
    var positions: [UInt32] = []

    static let fieldShift: UInt32 = 24
    /// Words after this offset in one field are not indexed (a field is cut at 16 million words).
    static let maximumOffset = (1 << 24) - 1

    var count: Int { documents.count }
    var isEmpty: Bool { documents.isEmpty }

    func positionRange(_ index: Int) -> Range<Int> {
        (index == 0 ? 0 : positionEnds[index - 1])..<positionEnds[index]
    }

    func termFrequency(_ index: Int) -> Int { positionRange(index).count }

    mutating func append(document: UInt64, length: UInt32, positions newPositions: some Sequence<UInt32>) {
        documents.append(document)
        lengths.append(length)
        positions.append(contentsOf: newPositions)
        positionEnds.append(positions.count)
    }

    mutating func append(_ other: PostingList, _ index: Int) {
        append(
            document: other.documents[index], length: other.lengths[index],
            positions: other.positions[other.positionRange(index)])
    }

    /// The union of several lists (a prefix's terms): positions of a document merged in order.
    static func union(_ lists: [PostingList]) -> PostingList {
        let lists = lists.filter { !$0.isEmpty }
        if lists.count <= 1 { return lists.first ?? PostingList() }
        var cursors = Array(repeating: 0, count: lists.count)
        var result = PostingList()
        while true {
            var next: UInt64?
            for (list, cursor) in zip(lists, cursors) where cursor < list.count {
                let document = list.documents[cursor]
                if next == nil || document < next! { next = document }
            }
            guard let document = next else { return result }
            var merged: [UInt32] = []
            var length: UInt32 = 0
            for index in lists.indices where cursors[index] < lists[index].count && lists[index].documents[cursors[index]] == document {
                merged.append(contentsOf: lists[index].positions[lists[index].positionRange(cursors[index])])
                length = lists[index].lengths[cursors[index]]
                cursors[index] += 1
            }
            merged.sort()
            result.append(document: document, length: length, positions: merged)
        }
    }
}

/// Unsigned LEB128 integers: 7 bits a byte, low bits first.
enum Varint {
    static func append(_ value: UInt64, to bytes: inout [UInt8]) {
        var rest = value
        while rest >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }

    /// Reads one integer at `offset`, advancing it. Throws `.corruption` past the end or beyond 64 bits.
    static func read(_ bytes: UnsafeRawBufferPointer, _ offset: inout Int) throws -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while offset < bytes.count {
            let byte = bytes[offset]
            offset += 1
            guard shift < 64 else { break }
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
        throw CouchetteError(.corruption, "a full-text posting block is cut short or malformed")
    }
}

/// The byte layout of a block of postings (the value under a term's block key): for each
/// document, `varint(document - previous)` (the first from the block key's document, so 0),
/// `varint(length)`, `varint(count)`, then `count` × `varint(position - previous position)`.
enum PostingBlock {
    /// Blocks are closed before they pass this many bytes (one longer posting gets a block of its
    /// own): eight blocks and their keys fill a 4 KB LMDB page, and a block is cheap to rewrite.
    static let maximumSize = 480

    static func decode(_ bytes: UnsafeRawBufferPointer, first: UInt64, into list: inout PostingList) throws {
        var offset = 0
        var document = first
        while offset < bytes.count {
            document &+= try Varint.read(bytes, &offset)
            let length = try Varint.read(bytes, &offset)
            let count = try Varint.read(bytes, &offset)
            guard count <= UInt64(bytes.count - offset), length <= UInt64(UInt32.max) else {
                throw CouchetteError(.corruption, "a full-text posting block holds an impossible count")
            }
            var position: UInt64 = 0
            list.documents.append(document)
            list.lengths.append(UInt32(length))
            for _ in 0..<count {
                position &+= try Varint.read(bytes, &offset)
                list.positions.append(UInt32(truncatingIfNeeded: position))
            }
            list.positionEnds.append(list.positions.count)
        }
    }

    /// The last document of a block, read without keeping anything.
    static func lastDocument(_ bytes: UnsafeRawBufferPointer, first: UInt64) throws -> UInt64 {
        var offset = 0
        var document = first
        while offset < bytes.count {
            document &+= try Varint.read(bytes, &offset)
            _ = try Varint.read(bytes, &offset)
            let count = try Varint.read(bytes, &offset)
            guard count <= UInt64(bytes.count - offset) else {
                throw CouchetteError(.corruption, "a full-text posting block holds an impossible count")
            }
            for _ in 0..<count { _ = try Varint.read(bytes, &offset) }
        }
        return document
    }

    /// Appends one posting to a block whose last document is `previous`.
    static func encode(
        document: UInt64, length: UInt32, positions: some Swift.Collection<UInt32>, after previous: UInt64,
        to bytes: inout [UInt8]
    ) {
        Varint.append(document &- previous, to: &bytes)
        Varint.append(UInt64(length), to: &bytes)
        Varint.append(UInt64(positions.count), to: &bytes)
        var last: UInt32 = 0
        for position in positions {
            Varint.append(UInt64(position &- last), to: &bytes)
            last = position
        }
    }

    /// `list` cut into blocks of at most ``maximumSize`` bytes: (first document, bytes) each.
    static func blocks(_ list: PostingList) -> [(first: UInt64, bytes: [UInt8])] {
        var builder = BlockBuilder()
        for index in 0..<list.count {
            builder.append(
                document: list.documents[index], length: list.lengths[index], positions: list.positions[list.positionRange(index)])
        }
        return builder.blocks
    }
}

/// Postings of one term in document order, encoded into blocks as they come.
struct BlockBuilder {
    private var closed: [(first: UInt64, bytes: [UInt8])] = []
    private var current: [UInt8] = []
    private var currentFirst: UInt64 = 0
    private var previous: UInt64 = 0

    var isEmpty: Bool { closed.isEmpty && current.isEmpty }

    var blocks: [(first: UInt64, bytes: [UInt8])] {
        current.isEmpty ? closed : closed + [(currentFirst, current)]
    }

    mutating func append(document: UInt64, length: UInt32, positions: some Swift.Collection<UInt32>) {
        if current.isEmpty {
            currentFirst = document
            PostingBlock.encode(document: document, length: length, positions: positions, after: document, to: &current)
        } else {
            let mark = current.count
            PostingBlock.encode(document: document, length: length, positions: positions, after: previous, to: &current)
            if current.count > PostingBlock.maximumSize {
                // Too big for this block: it closes without the posting, which starts the next one.
                current.removeSubrange(mark...)
                closed.append((currentFirst, current))
                current = []
                currentFirst = document
                PostingBlock.encode(document: document, length: length, positions: positions, after: document, to: &current)
            }
        }
        previous = document
    }

    /// The postings again (to merge them with a term's stored blocks).
    func decoded() throws -> PostingList {
        var list = PostingList()
        for block in blocks {
            try block.bytes.withUnsafeBytes { try PostingBlock.decode($0, first: block.first, into: &list) }
        }
        return list
    }
}
