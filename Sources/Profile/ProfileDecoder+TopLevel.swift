import HTTP1
import JSON
import WebSocket

/// The top level: the profile object, its target, TLS, headers, auth and report options.
extension ProfileReader {
    mutating func profile(_ document: JSONValue) -> Profile? {
        guard let root = object(document, "", kind: "profile") else { return nil }
        var version = Profile.currentVersion
        if let value = required(root, "version", "", hint: "this build reads version \(Profile.currentVersion)") {
            if let number = integer(value, "version", in: 1...Int.max) {
                if number != Profile.currentVersion {
                    problem("version", "version \(number) is not supported", hint: "this build reads version \(Profile.currentVersion)")
                }
                version = number
            }
        }
        let name = required(root, "name", "").flatMap { string($0, "name") }
        if let name, !name.allSatisfy({ $0.isLetter || $0.isNumber || "-_.".contains($0) }) {
            problem("name", "\"\(name)\" may only hold letters, digits, '-', '_' and '.'", hint: "it names the report file")
        } else if let name, name.hasPrefix(".") {
            // `<name>-shard1of4.json` would be a hidden file, which `wsload merge DIR` (like a shell's `*.json`) skips.
            problem("name", "\"\(name)\" starts with '.'", hint: "it names the report files, which would be hidden")
        }
        _ = string(root["description"], "description", nonEmpty: false)
        let target = required(root, "target", "", hint: "a ws:// or wss:// URL, or \"embedded\"").flatMap { self.target($0) }
        let tls = self.tlsOptions(root["tls"])
        let headers = self.headers(root["headers"])
        let authentication = self.authentication(root["auth"])
        let duration = required(root, "duration", "").flatMap { self.duration($0, "duration", minimum: .milliseconds(1)) }
        let gracefulStop = self.duration(root["gracefulStop"], "gracefulStop") ?? .seconds(5)
        // The file's loops and seed stay in the document (see ProfileOverrides), so they are checked even when
        // overridden, as the file's own; then the command line's replace them.
        var loops = integer(root["loops"], "loops", in: 1...256)
        var seed = integer(root["seed"], "seed", in: 0...Int.max).map { UInt64($0) }
        if let override = overrides.loops {
            loops = (1...256).contains(override) ? override : nil
            if loops == nil { problem("loops", "\(override) is out of range", hint: "use 1...256", setBy: "--loops") }
        }
        if let override = overrides.seed {
            seed = override <= UInt64(Int.max) ? override : nil
            if seed == nil { problem("seed", "\(override) is out of range", hint: "use 0...\(Int.max)", setBy: "--seed") }
        }
        let data = dataSources(root["data"])
        let feederNames = Set(data.map(\.name))
        var scenarios: [Scenario] = []
        if let list = required(root, "scenarios", "").flatMap({ array($0, "scenarios") }) {
            if list.isEmpty { problem("scenarios", "must hold at least one scenario") }
            for (index, element) in list.enumerated() {
                if let scenario = self.scenario(element, "scenarios[\(index)]", feederNames: feederNames) {
                    refuseAuthenticationConflicts(scenario, "scenarios[\(index)]", authentication)
                    scenarios.append(scenario)
                }
            }
            var seen: Set<String> = []
            for (index, scenario) in scenarios.enumerated() where !seen.insert(scenario.name).inserted {
                problem("scenarios[\(index)].name", "\"\(scenario.name)\" names two scenarios", hint: "names must be unique")
            }
        }
        let thresholds = self.thresholds(root["thresholds"], scenarios: scenarios)
        let chaos = self.chaos(root["chaos"], target: target, duration: duration)
        let report = reportOptions(root["report"])
        if case .embedded? = target, tls.caFile != nil || tls.serverName != nil {
            if overrides.target != nil {
                problem("tls", "the embedded target (set by --target) speaks plain ws://", hint: "remove tls, or give --target a wss:// URL")
            } else {
                problem("tls", "the embedded target speaks plain ws://", hint: "remove tls, or target a wss:// URL")
            }
        }
        guard problems.isEmpty, let name, let target, let duration else { return nil }
        var profile = Profile(version: version, name: name, target: target, duration: duration, scenarios: scenarios)
        profile.tls = tls
        profile.headers = headers
        profile.authentication = authentication
        profile.gracefulStop = gracefulStop
        profile.loops = loops
        profile.seed = seed
        profile.thresholds = thresholds
        profile.chaos = chaos
        profile.report = report
        profile.data = data
        return profile
    }

    mutating func target(_ value: JSONValue) -> Profile.Target? {
        guard let text = string(value, "target") else { return nil }
        if text == "embedded" { return .embedded }
        do {
            return .url(try WebSocketURL(text))
        } catch {
            problem("target", error.description, hint: "e.g. ws://127.0.0.1:8080/ws, or \"embedded\"")
            return nil
        }
    }

    mutating func tlsOptions(_ value: JSONValue?) -> Profile.TLSOptions {
        var options = Profile.TLSOptions()
        guard let object = object(value, "tls", kind: "tls") else { return options }
        options.caFile = string(object["caFile"], "tls.caFile")
        options.isInsecure = bool(object["insecure"], "tls.insecure") ?? false
        options.serverName = string(object["serverName"], "tls.serverName")
        if options.isInsecure && options.caFile != nil {
            problem("tls.insecure", "insecure and caFile contradict each other", hint: "verify with caFile, or set insecure alone")
        }
        return options
    }

    mutating func headers(_ value: JSONValue?) -> [(name: String, value: String)] {
        guard let value else { return [] }
        guard let object = value.objectValue else {
            problem("headers", "expected an object of header names to values, found \(value.kindName)")
            return []
        }
        let reserved = ["host", "upgrade", "connection", "sec-websocket-key", "sec-websocket-version",
                        "sec-websocket-extensions", "sec-websocket-protocol", "content-length", "transfer-encoding"]
        var headers: [(name: String, value: String)] = []
        for (name, element) in object.members {
            let path = "headers." + TerminalText.printable(name, limit: 80)
            do {
                try HTTPHeaders.validate(name: name)
            } catch {
                problem(path, error.description)
                continue
            }
            if reserved.contains(name.lowercased()) {
                problem(path, "\(name) is set by the handshake itself",
                        hint: name.lowercased() == "sec-websocket-protocol" ? "use the scenario's subprotocols" : nil)
                continue
            }
            if name.lowercased() == "authorization" {
                problem(path, "a credential in the profile would be copied wherever the profile goes",
                        hint: "use auth with tokenEnv or tokenFile")
                continue
            }
            guard let text = string(element, path, nonEmpty: false) else { continue }
            do {
                try HTTPHeaders.validate(name: name, value: text)
            } catch {
                problem(path, error.description)
                continue
            }
            headers.append((name, text))
        }
        return headers
    }

    mutating func authentication(_ value: JSONValue?) -> Profile.Authentication? {
        guard let object = object(value, "auth", kind: "auth") else { return nil }
        enum Kind: String, CaseIterable { case bearer, header, query }
        let kind = required(object, "type", "auth", hint: "bearer, header or query").flatMap { choice($0, "auth.type", as: Kind.self) }
        let name = string(object["name"], "auth.name")
        let environment = string(object["tokenEnv"], "auth.tokenEnv")
        let file = string(object["tokenFile"], "auth.tokenFile")
        let source: Profile.Authentication.Source?
        switch (environment, file) {
        case (let variable?, nil): source = .environment(variable)
        case (nil, let path?): source = .file(path)
        case (.some, .some):
            problem("auth", "tokenEnv and tokenFile are both set", hint: "choose one")
            source = nil
        case (nil, nil):
            if object["tokenEnv"] == nil && object["tokenFile"] == nil {
                problem("auth", "needs tokenEnv or tokenFile", hint: "the token itself never goes in a profile")
            }
            source = nil
        }
        let placement: Profile.Authentication.Placement?
        switch kind {
        case .bearer?:
            if name != nil { problem("auth.name", "a bearer token needs no name", hint: "name is for header and query") }
            placement = .bearer
        case .header?, .query?:
            if let name {
                if kind == .header {
                    do {
                        try HTTPHeaders.validate(name: name)
                    } catch {
                        problem("auth.name", error.description)
                    }
                } else if !name.utf8.allSatisfy(URLSyntax.isQueryNameByte) {
                    problem("auth.name", "\"\(TerminalText.printable(name, limit: 80))\" is not a plain query parameter name",
                            hint: "letters, digits, '-', '.', '_' and '~': it goes into the URL as written")
                }
                placement = kind == .header ? .header(name: name) : .query(name: name)
            } else {
                if object["name"] == nil { problem("auth.name", "is required for type \(kind!.rawValue)") }
                placement = nil
            }
        case nil: placement = nil
        }
        guard let placement, let source else { return nil }
        return Profile.Authentication(placement: placement, source: source)
    }

    mutating func reportOptions(_ value: JSONValue?) -> Profile.ReportOptions {
        var options = Profile.ReportOptions()
        guard let object = object(value, "report", kind: "report") else { return options }
        if let directory = string(object["directory"], "report.directory") { options.directory = directory }
        if let interval = duration(object["interval"], "report.interval", minimum: .milliseconds(100)) {
            options.interval = interval
        }
        if let count = integer(object["maxIntervals"], "report.maxIntervals", in: Profile.ReportOptions.maxIntervalsRange) {
            options.maxIntervals = count
        }
        return options
    }
}
