package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// runCompletion prints a shell completion script: commands, each command's
// flags (both spellings), files for the rest.
func runCompletion(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		errorf(stderr, "completion: name one shell: bash, zsh or fish")
		return exitTrouble
	}
	// From the table: every command's name, the flags (both spellings) of
	// the commands that take files, and the commands with help of their own.
	var names, withFlags, withHelp []string
	flagsOf := map[string][]string{}
	for _, s := range subcommands() {
		names = append(names, s.name)
		if s.help != "" {
			withHelp = append(withHelp, s.name)
		}
		if s.flags == nil {
			continue
		}
		withFlags = append(withFlags, s.name)
		s.flags(io.Discard, io.Discard).VisitAll(func(f *flag.Flag) {
			if len(f.Name) == 1 {
				flagsOf[s.name] = append(flagsOf[s.name], "-"+f.Name)
			} else {
				flagsOf[s.name] = append(flagsOf[s.name], "--"+f.Name)
			}
		})
	}
	cmds, helped := strings.Join(names, " "), strings.Join(withHelp, " ")
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
		for _, name := range withFlags {
			fmt.Fprintf(stdout, "\t%s) flags=%q ;;\n", name, strings.Join(flagsOf[name], " "))
		}
		fmt.Fprintf(stdout, "\thelp) COMPREPLY=($(compgen -W %q -- \"$cur\")); return ;;\n", helped)
		fmt.Fprint(stdout, `	completion) COMPREPLY=($(compgen -W "bash zsh fish" -- "$cur")); return ;;
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
		for _, name := range withFlags {
			fmt.Fprintf(stdout, "\t%s) [[ $PREFIX == -* ]] && compadd -- %s || _files ;;\n", name, strings.Join(flagsOf[name], " "))
		}
		fmt.Fprintf(stdout, "\thelp) compadd -- %s ;;\n\tcompletion) compadd -- bash zsh fish ;;\n\tesac\n}\ncompdef _pkbf pkbf\n", helped)
	case "fish":
		fmt.Fprintf(stdout, "# fish completion for pkbf: pkbf completion fish > ~/.config/fish/completions/pkbf.fish\ncomplete -c pkbf -f -n __fish_use_subcommand -a %q\n", cmds)
		for _, name := range withFlags {
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
