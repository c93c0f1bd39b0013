/// Postings read from a full-text index in LMDB, inside one transaction.
struct StoredPostings: FullTextPostingSource {
    let txn: ReadTransaction
    let store: FullTextStore
    /// The most distinct terms one `prefix*` may expand to.
    static let prefixTermLimit = 100_000

    func postings(term: String) throws -> PostingList { try store.postings(txn, term: term) }

    func postings(prefix: String) throws -> PostingList {
        try store.postings(txn, prefix: prefix, limit: Self.prefixTermLimit)
    }
}

/// The postings of one document's own terms (document number 1): how MATCH is decided for a
/// document that did not come through the index (a live query checking a changed document).
struct DocumentPostings: FullTextPostingSource {
    let document: DocumentTerms

    private func list(_ positions: [UInt32]?) -> PostingList {
        var list = PostingList()
        if let positions { list.append(document: 1, length: document.length, positions: positions) }
        return list
    }

    func postings(term: String) throws -> PostingList { list(document.terms[term]) }

    func postings(prefix: String) throws -> PostingList {
        // Bytes, not Characters: the index compares term keys byte by byte.
        let matching = document.terms.filter { $0.key.utf8.starts(with: prefix.utf8) }.flatMap(\.value).sorted()
        return list(matching.isEmpty ? nil : matching)
    }
}
