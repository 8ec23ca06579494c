package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// runCompletion prints a shell completion script: commands, each command's
// flags (both spellings), files for the rest.
func runCompletion(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		errorf(stderr, "completion: name one shell: bash, zsh or fish")
		return exitTrouble
	}
	flagsOf := map[string][]string{}
	for _, name := range []string{"info", "check", "create", "add", "serve"} {
		var c *command
		switch name {
		case "serve":
			c, _ = serveCommand(io.Discard, io.Discard)
		case "info":
			c = infoCommand(io.Discard, io.Discard)
		case "check":
			c, _ = checkCommand(io.Discard, io.Discard)
		case "create":
			c, _ = createCommand(io.Discard, io.Discard)
		case "add":
			c, _ = addCommand(io.Discard, io.Discard)
		}
		c.VisitAll(func(f *flag.Flag) {
			if len(f.Name) == 1 {
				flagsOf[name] = append(flagsOf[name], "-"+f.Name)
			} else {
				flagsOf[name] = append(flagsOf[name], "--"+f.Name)
			}
		})
	}
	cmds := strings.Join(commands, " ")
	switch args[0] {
	case "bash":
		fmt.Fprintf(stdout, `# bash completion for pkbf: source <(pkbf completion bash)
_pkbf() {
	local cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[1]}
	if [ "$COMP_CWORD" -eq 1 ]; then
		COMPREPLY=($(compgen -W "%s --version --help" -- "$cur"))
		return
	fi
	local flags
	case $cmd in
`, cmds)
		for _, name := range []string{"info", "check", "create", "add", "serve"} {
			fmt.Fprintf(stdout, "\t%s) flags=%q ;;\n", name, strings.Join(flagsOf[name], " "))
		}
		fmt.Fprint(stdout, `	help) COMPREPLY=($(compgen -W "info check create add serve completion" -- "$cur")); return ;;
	completion) COMPREPLY=($(compgen -W "bash zsh fish" -- "$cur")); return ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$flags" -- "$cur"))
	else
		COMPREPLY=($(compgen -f -- "$cur"))
	fi
}
complete -o filenames -F _pkbf pkbf
`)
	case "zsh":
		fmt.Fprintf(stdout, "#compdef pkbf\n# zsh completion for pkbf: pkbf completion zsh > \"${fpath[1]}/_pkbf\"\n_pkbf() {\n\tif (( CURRENT == 2 )); then\n\t\tcompadd -- %s --version --help\n\t\treturn\n\tfi\n\tcase $words[2] in\n", cmds)
		for _, name := range []string{"info", "check", "create", "add", "serve"} {
			fmt.Fprintf(stdout, "\t%s) [[ $PREFIX == -* ]] && compadd -- %s || _files ;;\n", name, strings.Join(flagsOf[name], " "))
		}
		fmt.Fprint(stdout, "\thelp) compadd -- info check create add serve completion ;;\n\tcompletion) compadd -- bash zsh fish ;;\n\tesac\n}\ncompdef _pkbf pkbf\n")
	case "fish":
		fmt.Fprintf(stdout, "# fish completion for pkbf: pkbf completion fish > ~/.config/fish/completions/pkbf.fish\ncomplete -c pkbf -f -n __fish_use_subcommand -a %q\n", cmds)
		for _, name := range []string{"info", "check", "create", "add", "serve"} {
			for _, fl := range flagsOf[name] {
				if strings.HasPrefix(fl, "--") {
					fmt.Fprintf(stdout, "complete -c pkbf -n '__fish_seen_subcommand_from %s' -l %s\n", name, fl[2:])
				} else {
					fmt.Fprintf(stdout, "complete -c pkbf -n '__fish_seen_subcommand_from %s' -s %s\n", name, fl[1:])
				}
			}
			fmt.Fprintf(stdout, "complete -c pkbf -n '__fish_seen_subcommand_from %s' -F\n", name)
		}
	default:
		errorf(stderr, "completion: unknown shell %q: bash, zsh or fish", args[0])
		return exitTrouble
	}
	return exitOK
}
