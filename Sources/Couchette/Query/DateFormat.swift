/// The output format of a date function, given by example (`'1111-11-11T11:11:11.111Z'`,
/// `'1111-11-11'`, `'11:11:11+00:00'`) or by tokens (`'%Y-%m-%dT%H:%M:%S%z'`, `'%F'`, `'%T'`).
///
/// The rules are LiteCore's (Couchbase Lite's), read from its behaviour: a format has a date
/// (`yyyy-mm-dd`), a time (`hh:mm:ss`, always with seconds, optionally `.sss`) or both (then
/// separated by `T` or a space); a time may end with a zone, `Z` or `±hhmm` (offset written
/// without a colon) or `±hh:mm` (with one). A format that does not read this way is ignored and
/// the default, full ISO-8601, is used (so `'1111-11-11T11:11'`, having no seconds, gives
/// `2018-10-23T18:33:00Z`). Milliseconds are written only when the format has them and they are
/// not zero; a zero offset is always written `Z`.
struct DateFormat: Equatable {
    enum Zone: Equatable {
        /// `+0700`
        case compact
        /// `+07:00`
        case colon
    }

    var hasDate: Bool
    var hasTime: Bool
    var hasMillis: Bool
    var separator: Character
    var zone: Zone?

    /// `yyyy-mm-ddThh:mm:ss[.sss](Z|±hhmm)`: what the date functions write without a format.
    static let iso = DateFormat(hasDate: true, hasTime: true, hasMillis: true, separator: "T", zone: .compact)

    /// The format `text` describes, or nil when it describes none (the caller uses ``iso``).
    static func parse(_ text: String) -> DateFormat? {
        let characters = Array(text)
        guard !characters.isEmpty else { return nil }
        return characters[0] == "%" ? tokens(characters) : example(characters[...])
    }

    // MARK: - By example

    private static func example(_ text: ArraySlice<Character>) -> DateFormat? {
        var rest = text
        var zone: Zone?
        if rest.last == "Z" {
            zone = .compact
            rest = rest.dropLast()
        } else if rest.count >= 5 {
            let colon = rest[rest.endIndex - 3] == ":"
            let start = rest.endIndex - (colon ? 6 : 5)
            if start >= rest.startIndex, rest[start] == "+" || rest[start] == "-" {
                zone = colon ? .colon : .compact
                rest = rest[..<start]
            }
        }
        var hasTime = false, hasMillis = false
        var afterTime = rest
        if afterTime.count >= 8 {
            hasMillis = afterTime[afterTime.endIndex - 4] == "."
            if hasMillis { afterTime = afterTime.count >= 12 ? afterTime.dropLast(4) : [] }
            if afterTime.count >= 8, afterTime[afterTime.endIndex - 3] == ":", afterTime[afterTime.endIndex - 6] == ":" {
                hasTime = true
                rest = afterTime.dropLast(8)
            }
        }
        if !hasTime { hasMillis = false }
        var separator: Character?
        if hasTime, let last = rest.last {
            guard last == " " || last == "T" else { return nil }
            separator = last
            rest = rest.dropLast()
        }
        var hasDate = false
        if rest.count >= 10 {
            let a = rest[rest.endIndex - 3], b = rest[rest.endIndex - 6]
            hasDate = a == b && (a == "-" || a == "/")
        }
        if separator != nil && !(hasDate && hasTime) { return nil }
        if zone != nil && !hasTime { return nil }
        if hasDate && hasTime && separator == nil { return nil }
        guard hasDate || hasTime else { return nil }
        return DateFormat(
            hasDate: hasDate, hasTime: hasTime, hasMillis: hasMillis, separator: separator ?? "T",
            zone: hasTime ? zone : nil)
    }

    // MARK: - By tokens

    /// `%Y-%m-%d` (or `%Y/%m/%d`, `%F`), then optionally `T` or a space and `%H:%M:%S` (or `%T`),
    /// `%s` or `%.s` for milliseconds, `%z` or `%Ez` for the zone.
    private static func tokens(_ text: [Character]) -> DateFormat? {
        var rest = String(text)[...]
        func take(_ prefix: String) -> Bool {
            guard rest.hasPrefix(prefix) else { return false }
            rest = rest.dropFirst(prefix.count)
            return true
        }
        let hasDate = take("%F") || take("%Y-%m-%d") || take("%Y/%m/%d")
        var separator: Character?
        if hasDate, let next = rest.first, next == " " || next == "T" {
            separator = next
            rest = rest.dropFirst()
        }
        let hasTime = take("%T") || take("%H:%M:%S")
        let hasMillis = hasTime && (take("%s") || take("%.s") || take(".%s"))
        var zone: Zone?
        if hasTime {
            if take("%Ez") { zone = .colon } else if take("%z") { zone = .compact }
        }
        guard rest.isEmpty, hasDate || hasTime else { return nil }
        if hasDate && hasTime && separator == nil { return nil }
        return DateFormat(hasDate: hasDate, hasTime: hasTime, hasMillis: hasMillis, separator: separator ?? "T", zone: zone)
    }

    // MARK: - Writing

    /// `utcMillis` as seen at `offsetMinutes` east of UTC, in this format.
    func string(utcMillis: Int64, offsetMinutes: Int) -> String {
        let local = utcMillis + Int64(offsetMinutes) * 60_000
        let (days, dayMillis) = Self.split(local)
        var text = ""
        if hasDate {
            let (year, month, day) = ISO8601.civil(fromDays: days)
            text = Self.pad(year, 4) + "-" + Self.pad(month, 2) + "-" + Self.pad(day, 2)
        }
        if hasTime {
            if hasDate { text.append(separator) }
            let seconds = dayMillis / 1000
            text += Self.pad(seconds / 3600, 2) + ":" + Self.pad(seconds / 60 % 60, 2) + ":" + Self.pad(seconds % 60, 2)
            if hasMillis && utcMillis % 1000 != 0 { text += "." + Self.pad(dayMillis % 1000, 3) }
            if let zone {
                if offsetMinutes == 0 {
                    text += "Z"
                } else {
                    let minutes = Int64(abs(offsetMinutes))
                    text +=
                        (offsetMinutes < 0 ? "-" : "+") + Self.pad(minutes / 60, 2) + (zone == .colon ? ":" : "")
                        + Self.pad(minutes % 60, 2)
                }
            }
        }
        return text
    }

    /// Days since 1970 and milliseconds into that day (floored, so times before 1970 work).
    static func split(_ millis: Int64) -> (days: Int64, millis: Int64) {
        var days = millis / 86_400_000, rest = millis % 86_400_000
        if rest < 0 {
            rest += 86_400_000
            days -= 1
        }
        return (days, rest)
    }

    private static func pad(_ number: Int64, _ width: Int) -> String {
        let text = String(number)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }
}
