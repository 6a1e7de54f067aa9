import Glibc
import WSLoadCLI

let code = await WSLoad.main(arguments: Array(CommandLine.arguments.dropFirst()))
exit(code.rawValue)
