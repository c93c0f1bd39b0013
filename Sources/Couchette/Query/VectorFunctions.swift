import Foundation

/// The vector distance functions of Couchbase Lite's function table (Enterprise Edition there;
/// computed exactly here, without a vector index):
///
/// - `EUCLIDEAN_DISTANCE(v1, v2)`: √Σ(aᵢ − bᵢ)². An optional third argument raises the distance
///   to that power, so `EUCLIDEAN_DISTANCE(v1, v2, 2)` is the squared Euclidean distance.
/// - `COSINE_DISTANCE(v1, v2)`: 1 − (v1 · v2) / (|v1| |v2|).
///
/// As in LiteCore, elements are read as numbers (a boolean as 1 or 0, anything else that is not
/// a number as 0), and the result is MISSING when either argument is not an array, the arrays'
/// lengths differ, or the distance is not a finite number (a zero vector's cosine).
enum VectorFunctions {
    static func add(_ lenient: FunctionLibrary.Lenient) {
        lenient("EUCLIDEAN_DISTANCE", 2...3) { values in
            guard let (a, b) = vectors(values) else { return nil }
            var squares = 0.0
            for (x, y) in zip(a, b) { squares += (x - y) * (x - y) }
            var distance = squares.squareRoot()
            if values.count > 2 {
                let power = values[2].map(FunctionLibrary.numericValue) ?? 0
                distance = power == 2 ? squares : pow(distance, power)
            }
            return distance.isFinite ? .double(distance) : nil
        }
        lenient("COSINE_DISTANCE", 2...2) { values in
            guard let (a, b) = vectors(values) else { return nil }
            var dot = 0.0, aa = 0.0, bb = 0.0
            for (x, y) in zip(a, b) {
                dot += x * y
                aa += x * x
                bb += y * y
            }
            let distance = 1 - dot / (aa * bb).squareRoot()
            return distance.isFinite ? .double(distance) : nil
        }
    }

    /// The first two arguments as equally long arrays of numbers, or nil.
    private static func vectors(_ values: [Datum?]) -> ([Double], [Double])? {
        guard let a = values[0]?.elements, let b = values[1]?.elements, a.count == b.count else { return nil }
        return (a.map(FunctionLibrary.numericValue), b.map(FunctionLibrary.numericValue))
    }
}
