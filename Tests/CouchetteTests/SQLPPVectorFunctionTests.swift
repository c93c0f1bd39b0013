import Foundation
import Testing

@testable import Couchette

/// The vector distance functions of Couchbase Lite's function table, over literals and stored
/// vectors, and their MISSING results for arguments that are not two vectors of one length.
@Suite(.tags(.sanitizeAddress)) struct SQLPPVectorFunctionTests {
    @Test func distances() async throws {
        try await withDatabase { db, _ in
            try await SQLPP.save(db, "d", #"{"v":[1,2,3],"w":[3,2,1],"zero":[0,0,0],"n":null,"s":"abc"}"#)
            try await SQLPP.expect(
                db,
                [
                    ("EUCLIDEAN_DISTANCE([10, 10], [13, 14])", "5"),
                    ("EUCLIDEAN_DISTANCE([10, 10], [13, 14], 2)", "25"),
                    ("EUCLIDEAN_DISTANCE([10, 10], [13, 14], 1)", "5"),
                    ("EUCLIDEAN_DISTANCE(v, w)", "2.8284271247461903"), ("EUCLIDEAN_DISTANCE(v, v)", "0"),
                    ("COSINE_DISTANCE([1, 0], [0, 1])", "1"), ("COSINE_DISTANCE([1, 2], [2, 4])", "0"),
                    ("COSINE_DISTANCE([1, 0], [-1, 0])", "2"), ("ROUND(COSINE_DISTANCE(v, w), 6)", "0.285714"),
                    // Not two vectors of one length: MISSING.
                    ("EUCLIDEAN_DISTANCE([1, 2], [1, 2, 3])", nil), ("EUCLIDEAN_DISTANCE(s, v)", nil),
                    ("EUCLIDEAN_DISTANCE(n, v)", nil), ("EUCLIDEAN_DISTANCE(nope, v)", nil), ("COSINE_DISTANCE(v, 7)", nil),
                    ("COSINE_DISTANCE(zero, v)", nil),
                    // Elements are read as numbers: "x" counts as 0, true as 1.
                    ("EUCLIDEAN_DISTANCE(['x', true], [0, 1])", "0"),
                ])
            await expectCouchetteError(.invalidQuery) { _ = try db.createQuery("SELECT COSINE_DISTANCE(v) FROM _") }
            await expectCouchetteError(.invalidQuery) { _ = try db.createQuery("SELECT EUCLIDEAN_DISTANCE(v, w, 2, 3) FROM _") }
        }
    }

    @Test func nearestByDistance() async throws {
        try await withDatabase { db, _ in
            for (id, vector) in [("red", "[255, 0, 0]"), ("maroon", "[128, 0, 0]"), ("blue", "[0, 0, 255]"), ("none", "null")] {
                try await SQLPP.save(db, id, #"{"rgb":\#(vector)}"#)
            }
            let query = try db.createQuery(
                """
                SELECT META().id AS id, EUCLIDEAN_DISTANCE(rgb, $target) AS distance FROM _
                WHERE EUCLIDEAN_DISTANCE(rgb, $target) IS VALUED ORDER BY distance LIMIT 2
                """)
            query.parameters = Parameters().setArray([200, 0, 0], forName: "target")
            #expect(try await query.execute().map { $0.toJSON() } == [#"{"id":"red","distance":55}"#, #"{"id":"maroon","distance":72}"#])
        }
    }
}
