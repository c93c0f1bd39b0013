import Foundation

/// Where an evaluation reads postings: the index in LMDB, or one document's own terms.
protocol FullTextPostingSource {
    func postings(term: String) throws -> PostingList
    func postings(prefix: String) throws -> PostingList
}

/// The documents a full-text query matches, in document order, with their BM25 scores.
struct FullTextHits {
    var documents: [UInt64] = []
    var scores: [Double] = []
}

/// Evaluates a ``FullTextQuery`` over postings and scores the matches with Okapi BM25 as SQLite
/// FTS5's `bm25()` computes it (k1 = 1.2, b = 0.75, every field weighted 1): for each phrase
/// (a word is a one-word phrase) that a document matches,
/// `idf × f × (k1 + 1) / (f + k1 × (1 − b + b × |D| / avgdl))`, where `f` is the number of times the
/// phrase occurs in the document, `|D|` the document's length in terms, `avgdl` the average
/// length, and `idf = ln((N − n + 0.5) / (n + 0.5))` (at least 10⁻⁶) for `N` indexed documents,
/// `n` of them matching the phrase. A document's score is the sum over the phrases it matches
/// outside `NOT`'s right side; unlike FTS5's, it is positive: higher is more relevant.
struct FullTextEvaluator<Source: FullTextPostingSource> {
    let source: Source
    let documentCount: Double
    let averageLength: Double
    static var k1: Double { 1.2 }
    static var b: Double { 0.75 }

    init(source: Source, statistics: FullTextStore.Statistics) {
        self.source = source
        documentCount = Double(statistics.documents)
        averageLength = max(statistics.averageLength, 1)
    }

    func evaluate(_ query: FullTextQuery) throws -> FullTextHits {
        switch query {
        case .empty:
            return FullTextHits()
        case .phrase(let elements):
            return score(try phrase(elements))
        case .near(let phrases, let distances):
            return try near(phrases, distances)
        case .and(let left, let right):
            return Self.intersect(try evaluate(left), try evaluate(right))
        case .or(let left, let right):
            return Self.union(try evaluate(left), try evaluate(right))
        case .not(let left, let right):
            return Self.subtract(try evaluate(left), try evaluate(right))
        }
    }

    // MARK: - Phrases

    private func postings(_ element: FullTextQuery.Element) throws -> PostingList {
        element.isPrefix ? try source.postings(prefix: element.text) : try source.postings(term: element.text)
    }

    /// The documents where the phrase occurs, with the positions where it starts.
    func phrase(_ elements: [FullTextQuery.Element]) throws -> PostingList {
        guard let head = elements.first else { return PostingList() }
        let first = try postings(head)
        guard elements.count > 1 else { return first }
        var others: [(list: PostingList, offset: UInt32, cursor: Int)] = []
        for element in elements.dropFirst() {
            let list = try postings(element)
            if list.isEmpty { return PostingList() }
            others.append((list, UInt32(element.offset), 0))
        }
        var result = PostingList()
        var starts: [UInt32] = []
        documents: for index in 0..<first.count {
            let document = first.documents[index]
            for other in others.indices {
                while others[other].cursor < others[other].list.count && others[other].list.documents[others[other].cursor] < document {
                    others[other].cursor += 1
                }
                guard others[other].cursor < others[other].list.count,
                    others[other].list.documents[others[other].cursor] == document
                else { continue documents }
            }
            starts.removeAll(keepingCapacity: true)
            candidates: for start in first.positions[first.positionRange(index)] {
                for other in others {
                    let (target, overflow) = start.addingReportingOverflow(other.offset)
                    guard !overflow, target >> PostingList.fieldShift == start >> PostingList.fieldShift,
                        Self.contains(other.list, other.cursor, target)
                    else { continue candidates }
                }
                starts.append(start)
            }
            if !starts.isEmpty { result.append(document: document, length: first.lengths[index], positions: starts) }
        }
        return result
    }

    private static func contains(_ list: PostingList, _ index: Int, _ position: UInt32) -> Bool {
        let range = list.positionRange(index)
        var low = range.lowerBound, high = range.upperBound
        while low < high {
            let middle = (low + high) / 2
            if list.positions[middle] < position { low = middle + 1 } else { high = middle }
        }
        return low < range.upperBound && list.positions[low] == position
    }

    private func near(_ phrases: [[FullTextQuery.Element]], _ distances: [Int]) throws -> FullTextHits {
        let lists = try phrases.map { try phrase($0) }
        let widths = phrases.map { UInt32(($0.last?.offset ?? 0) + 1) }
        var cursors = Array(repeating: 0, count: lists.count)
        var kept = Array(repeating: PostingList(), count: lists.count)
        guard let first = lists.first else { return FullTextHits() }
        documents: for index in 0..<first.count {
            let document = first.documents[index]
            cursors[0] = index
            for other in 1..<lists.count {
                while cursors[other] < lists[other].count && lists[other].documents[cursors[other]] < document { cursors[other] += 1 }
                guard cursors[other] < lists[other].count, lists[other].documents[cursors[other]] == document else { continue documents }
            }
            for pair in 0..<distances.count {
                let a = lists[pair], b = lists[pair + 1]
                guard
                    Self.isNear(
                        a.positions[a.positionRange(cursors[pair])], widths[pair],
                        b.positions[b.positionRange(cursors[pair + 1])], widths[pair + 1],
                        UInt32(clamping: distances[pair]))
                else { continue documents }
            }
            for list in lists.indices { kept[list].append(lists[list], cursors[list]) }
        }
        var hits = score(kept[0])
        for list in kept.dropFirst() { hits = Self.intersect(hits, score(list)) }
        return hits
    }

    /// Whether some occurrence of A and some of B (in the same field) have at most `distance`
    /// words between them, in either order.
    private static func isNear(
        _ a: ArraySlice<UInt32>, _ widthA: UInt32, _ b: ArraySlice<UInt32>, _ widthB: UInt32,
        _ distance: UInt32
    ) -> Bool {
        for x in a {
            for y in b where x >> PostingList.fieldShift == y >> PostingList.fieldShift {
                // In 64 bits: a position near the top of the last field plus a width would overflow.
                let (x, y) = (UInt64(x), UInt64(y))
                if y >= x + UInt64(widthA) && y - (x + UInt64(widthA)) <= UInt64(distance) { return true }
                if x >= y + UInt64(widthB) && x - (y + UInt64(widthB)) <= UInt64(distance) { return true }
            }
        }
        return false
    }

    // MARK: - Scores and sets

    private func score(_ list: PostingList) -> FullTextHits {
        let matching = Double(list.count)
        let idf = max(1e-6, log((documentCount - matching + 0.5) / (matching + 0.5)))
        var hits = FullTextHits()
        hits.documents = list.documents
        hits.scores.reserveCapacity(list.count)
        let k1 = Self.k1, b = Self.b
        for index in 0..<list.count {
            let frequency = Double(list.termFrequency(index))
            let length = Double(list.lengths[index])
            hits.scores.append(idf * frequency * (k1 + 1) / (frequency + k1 * (1 - b + b * length / averageLength)))
        }
        return hits
    }

    static func intersect(_ a: FullTextHits, _ b: FullTextHits) -> FullTextHits {
        var result = FullTextHits()
        var i = 0, j = 0
        while i < a.documents.count && j < b.documents.count {
            let x = a.documents[i], y = b.documents[j]
            if x < y {
                i += 1
            } else if y < x {
                j += 1
            } else {
                result.documents.append(x)
                result.scores.append(a.scores[i] + b.scores[j])
                i += 1
                j += 1
            }
        }
        return result
    }

    static func union(_ a: FullTextHits, _ b: FullTextHits) -> FullTextHits {
        var result = FullTextHits()
        var i = 0, j = 0
        while i < a.documents.count || j < b.documents.count {
            if j == b.documents.count || (i < a.documents.count && a.documents[i] < b.documents[j]) {
                result.documents.append(a.documents[i]); result.scores.append(a.scores[i]); i += 1
            } else if i == a.documents.count || b.documents[j] < a.documents[i] {
                result.documents.append(b.documents[j]); result.scores.append(b.scores[j]); j += 1
            } else {
                result.documents.append(a.documents[i]); result.scores.append(a.scores[i] + b.scores[j]); i += 1; j += 1
            }
        }
        return result
    }

    static func subtract(_ a: FullTextHits, _ b: FullTextHits) -> FullTextHits {
        var result = FullTextHits()
        var j = 0
        for i in 0..<a.documents.count {
            while j < b.documents.count && b.documents[j] < a.documents[i] { j += 1 }
            if j < b.documents.count && b.documents[j] == a.documents[i] { continue }
            result.documents.append(a.documents[i])
            result.scores.append(a.scores[i])
        }
        return result
    }
}
