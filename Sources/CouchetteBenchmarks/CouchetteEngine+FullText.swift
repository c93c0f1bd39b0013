import Couchette
import Foundation

/// The full-text workloads through Couchette's public API: a FullTextIndexConfiguration, then
/// MATCH and RANK in SQL++.
extension CouchetteEngine: FullTextBenchmarkEngine {
    public func insertSentences(_ sentences: [(id: String, text: String)]) async throws {
        let documents = sentences.map { MutableDocument(id: $0.id).setString($0.text, forKey: "sentence") }
        try await database.inBatch { batch in
            for document in documents { try batch.save(document: document, in: collection) }
        }
    }

    public func createFullTextIndex() async throws {
        try await collection.createIndex(withName: "sentences", config: FullTextIndexConfiguration(["sentence"]))
    }

    public func prepareFullTextSearch() throws -> (String) async throws -> [[String]] {
        let query = try database.createQuery(
            """
            SELECT META().id AS id, sentence FROM _ WHERE MATCH(sentences, $search)
            ORDER BY RANK(sentences) DESC LIMIT 20
            """)
        return { text in
            query.parameters = Parameters().setString(text, forName: "search")
            return try await query.execute().map { row in [row.string(at: 0) ?? "", row.string(at: 1) ?? ""] }
        }
    }
}
